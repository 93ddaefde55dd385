/** Generates the cluster's CA, serving certificate and service-account key with `openssl`. */
import { join } from "node:path";

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
  "IP:10.96.0.1",
];

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
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await openssl([
    "req",
    "-x509",
    ...ec,
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
  await openssl([
    "req",
    "-x509",
    ...ec,
    "-CA",
    pki.caCert,
    "-CAkey",
    pki.caKey,
    "-keyout",
    pki.servingKey,
    "-out",
    pki.servingCert,
    "-days",
    "365",
    "-subj",
    "/CN=kube-apiserver",
    "-addext",
    `subjectAltName=${SANS.join(",")}`,
    "-addext",
    "basicConstraints=critical,CA:FALSE",
    "-addext",
    "keyUsage=critical,digitalSignature,keyEncipherment",
    "-addext",
    "extendedKeyUsage=serverAuth",
  ], dir);
  await openssl(["genrsa", "-out", pki.saKey, "2048"], dir);
  await openssl(["rsa", "-in", pki.saKey, "-pubout", "-out", pki.saPub], dir);
  return pki;
}
