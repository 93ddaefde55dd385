/** Generates the cluster's CA, serving certificate and service-account key with `openssl`. */
import { join } from "node:path";
import { KUBERNETES_SERVICE_IP } from "./services.ts";

/** Paths of the generated key material (all PEM). */
export interface Pki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  saKey: string;
  saPub: string;
}

/** Names the serving certificate is valid for (apiserver, KCM, scheduler all use it). */
const SANS = [
  "IP:127.0.0.1",
  "DNS:localhost",
  "DNS:kubernetes",
  "DNS:kubernetes.default",
  "DNS:kubernetes.default.svc",
  "DNS:kubernetes.default.svc.cluster.local",
  `IP:${KUBERNETES_SERVICE_IP}`,
];

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

async function openssl(args: string[], cwd: string): Promise<void> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("openssl", { args, cwd, stdin: "null" }).output();
  } catch (e) {
    throw new Error(`"openssl" is needed to generate the cluster PKI: ${e}`);
  }
  if (!out.success) {
    throw new Error(`openssl ${args.join(" ")} failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
}

/** A certificate to sign with the cluster CA. */
export interface CertRequest {
  /** File name stem: writes `<name>.crt` and `<name>.key` into the directory. */
  name: string;
  /** Subject, e.g. `/O=system:nodes/CN=system:node:real-node-0`. */
  subject: string;
  /** `serverAuth` needs `sans`; `clientAuth` carries the identity in the subject. */
  usage: "serverAuth" | "clientAuth";
  /** subjectAltNames, e.g. `["IP:127.0.0.1"]`. */
  sans?: string[];
}

/** Issues a certificate valid one year, signed by the CA of `pki`; returns its cert and key. */
export async function issueCert(
  pki: Pick<Pki, "caCert" | "caKey">,
  dir: string,
  req: CertRequest,
): Promise<{ cert: string; key: string }> {
  await Deno.mkdir(dir, { recursive: true });
  const out = { cert: join(dir, `${req.name}.crt`), key: join(dir, `${req.name}.key`) };
  await openssl([
    "req",
    "-x509",
    ...EC,
    "-CA",
    pki.caCert,
    "-CAkey",
    pki.caKey,
    "-keyout",
    out.key,
    "-out",
    out.cert,
    "-days",
    "365",
    "-subj",
    req.subject,
    ...(req.sans ? ["-addext", `subjectAltName=${req.sans.join(",")}`] : []),
    "-addext",
    "basicConstraints=critical,CA:FALSE",
    "-addext",
    "keyUsage=critical,digitalSignature,keyEncipherment",
    "-addext",
    `extendedKeyUsage=${req.usage}`,
  ], dir);
  return out;
}

/** Creates a fresh PKI in `dir` (a CA valid 10 years, a serving cert valid 1 year, an SA key). */
export async function generatePki(dir: string): Promise<Pki> {
  await Deno.mkdir(dir, { recursive: true });
  const p = (n: string) => join(dir, n);
  const pki: Pki = {
    caCert: p("ca.crt"),
    caKey: p("ca.key"),
    servingCert: p("serving.crt"),
    servingKey: p("serving.key"),
    saKey: p("sa.key"),
    saPub: p("sa.pub"),
  };
  await openssl([
    "req",
    "-x509",
    ...EC,
    "-keyout",
    pki.caKey,
    "-out",
    pki.caCert,
    "-days",
    "3650",
    "-subj",
    "/CN=local-cluster-ca",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
  ], dir);
  await issueCert(pki, dir, {
    name: "serving",
    subject: "/CN=kube-apiserver",
    usage: "serverAuth",
    sans: SANS,
  });
  await openssl(["genrsa", "-out", pki.saKey, "2048"], dir);
  await openssl(["rsa", "-in", pki.saKey, "-pubout", "-out", pki.saPub], dir);
  return pki;
}

/**
 * The API server's client certificate for calling aggregated API servers (the front proxy): CN
 * `front-proxy-client`, as `--requestheader-allowed-names` expects, signed by the CA of
 * `--requestheader-client-ca-file`, so an extension server trusts the user it forwards.
 */
export function frontProxyClient(
  pki: Pick<Pki, "caCert" | "caKey">,
  dir: string,
): Promise<{ cert: string; key: string }> {
  return issueCert(pki, dir, {
    name: "front-proxy-client",
    subject: "/CN=front-proxy-client",
    usage: "clientAuth",
  });
}
