/**
 * The operator's side of TLS to the rate limit engines (docs/global-engine.md "TLS between the
 * engines and the operator"): the xDS server's certificate and key, and optionally the CA of the
 * engines' client certificates, read from files (a kubernetes.io/tls Secret mounted into the
 * operator's Pod; the platform team's, e.g. made by cert-manager: the operator makes and stores no
 * certificate). Files that cannot serve (missing, unreadable, not PEM, a key that is not the
 * certificate's) are refused naming the flag, the file and the problem: at start that stops the
 * operator, later it keeps what is served and says so; never a plaintext fallback. The files are
 * looked at again every few seconds (their modification time, size and inode, as the istiod token
 * file is: src/kube/credentials.ts `TokenFile`; the kubelet swaps a Secret volume's files by a
 * symlink), and new ones reach new connections (`setSecureContext`) while open streams go on.
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import { readSmallFile } from "./bounded_read.ts";

/** Where the operator's xDS TLS material is (its flags). */
export interface XdsServingFiles {
  /** `--global-engine-xds-tls-cert-file`: the serving certificate (PEM, chain allowed). */
  certFile: string;
  /** `--global-engine-xds-tls-key-file`: its key (PEM). */
  keyFile: string;
  /**
   * `--global-engine-xds-client-ca-file`: the CA of the engines' client certificates (PEM); set,
   * a connection without a certificate it signed is refused.
   */
  clientCaFile?: string;
}

/** The flag of each file, as errors name them. */
const FLAGS = {
  certFile: "--global-engine-xds-tls-cert-file",
  keyFile: "--global-engine-xds-tls-key-file",
  clientCaFile: "--global-engine-xds-client-ca-file",
} as const;

/** TLS material that cannot serve: the message names the flag, the file and the problem. */
export class XdsTlsError extends Error {
  override name = "XdsTlsError";
}

/** The files read and checked: what a secure context is made of, and what to say of it. */
export interface XdsTlsMaterial {
  cert: string;
  key: string;
  ca?: string;
  /** The files' stamps when read (see `stampOf`). */
  stamp: string;
  /** The serving certificate's subject, names and end of validity, for logs. */
  subject: string;
  names: string;
  notAfter: string;
  /** What is served but will not work (an expired certificate): logged, not refused. */
  warnings: string[];
}

/** The PEM certificates of `text`, each parsed; a message when there is none or one is bad. */
function certificates(text: string): X509Certificate[] | string {
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g);
  if (!blocks) return "holds no PEM certificate";
  const out: X509Certificate[] = [];
  for (const [i, block] of blocks.entries()) {
    try {
      out.push(new X509Certificate(block));
    } catch (err) {
      return `certificate ${i + 1} cannot be read (${(err as Error).message})`;
    }
  }
  return out;
}

/** `modified:size:inode` of each file: a change to any (a swapped symlink too) is a new version. */
export async function stampOf(files: XdsServingFiles): Promise<string> {
  const paths = [files.certFile, files.keyFile, files.clientCaFile].filter((p) => p !== undefined);
  const stamps = await Promise.all(paths.map(async (p) => {
    try {
      const info = await Deno.stat(p);
      return `${info.mtime?.getTime() ?? 0}:${info.size}:${info.ino ?? 0}`;
    } catch {
      return "missing";
    }
  }));
  return stamps.join("|");
}

/**
 * Reads and checks the files: the certificate file holds PEM certificates (the first the
 * server's), the key file a private key that is the first certificate's, the client CA file PEM
 * certificates. Throws XdsTlsError naming the flag and the file. `now` (ms) dates the validity
 * check, which only warns.
 */
export async function readXdsTls(
  files: XdsServingFiles,
  now = Date.now(),
): Promise<XdsTlsMaterial> {
  const stamp = await stampOf(files);
  const read = async (which: keyof typeof FLAGS, path: string) => {
    try {
      return await readSmallFile(path);
    } catch (err) {
      throw new XdsTlsError(`${FLAGS[which]} ${path} cannot be read: ${(err as Error).message}`);
    }
  };
  const bad = (which: keyof typeof FLAGS, path: string, problem: string) =>
    new XdsTlsError(`${FLAGS[which]} ${path} ${problem}`);
  const cert = await read("certFile", files.certFile);
  const key = await read("keyFile", files.keyFile);
  const ca = files.clientCaFile === undefined
    ? undefined
    : await read("clientCaFile", files.clientCaFile);
  const chain = certificates(cert);
  if (typeof chain === "string") throw bad("certFile", files.certFile, chain);
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw bad("keyFile", files.keyFile, `holds no PEM private key (${(err as Error).message})`);
  }
  if (!chain[0].checkPrivateKey(privateKey)) {
    throw bad(
      "keyFile",
      files.keyFile,
      `is not the key of the certificate in ${files.certFile} (${chain[0].subject})`,
    );
  }
  if (ca !== undefined) {
    const cas = certificates(ca);
    if (typeof cas === "string") throw bad("clientCaFile", files.clientCaFile!, cas);
  }
  const leaf = chain[0];
  const warnings: string[] = [];
  if (Date.parse(leaf.validTo) < now) {
    warnings.push(`the certificate in ${files.certFile} expired at ${leaf.validTo}`);
  } else if (Date.parse(leaf.validFrom) > now) {
    warnings.push(`the certificate in ${files.certFile} is valid only from ${leaf.validFrom}`);
  }
  return {
    cert,
    key,
    ...(ca !== undefined ? { ca } : {}),
    stamp,
    subject: leaf.subject.replaceAll("\n", ","),
    names: leaf.subjectAltName ?? "",
    notAfter: leaf.validTo,
    warnings,
  };
}
