/**
 * A self-signed TLS certificate made at start, as controller-runtime's metrics server makes one when
 * given none: the bearer tokens scrapers send then never cross the network in clear (what
 * kube-rbac-proxy was put in front of plain-HTTP metrics for). ECDSA P-256 with WebCrypto; the
 * certificate's DER is written here because Deno has no X.509 writer and the image has no openssl.
 */

/** A certificate and its private key, PEM, as Deno.serve takes them. */
export interface CertKey {
  cert: string;
  key: string;
}

type Bytes = Uint8Array<ArrayBuffer>;

/** A DER TLV: tag, definite length, contents. */
function der(tag: number, ...parts: Bytes[]): Bytes {
  const body = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    body.set(p, at);
    at += p.length;
  }
  const len = body.length;
  const head = len < 0x80 ? [len] : len < 0x100 ? [0x81, len] : [0x82, len >> 8, len & 0xff];
  return new Uint8Array([tag, ...head, ...body]);
}

const seq = (...parts: Bytes[]) => der(0x30, ...parts);
const bytes = (...b: number[]) => new Uint8Array(b);

/** An unsigned big-endian integer, minimal and positive. */
function integer(value: Bytes): Bytes {
  let i = 0;
  while (i < value.length - 1 && value[i] === 0) i++;
  const v = value.subarray(i);
  return v[0] & 0x80 ? der(0x02, bytes(0), v) : der(0x02, v);
}

function oid(dotted: string): Bytes {
  const [a, b, ...rest] = dotted.split(".").map(Number);
  const out = [a * 40 + b];
  for (const n of rest) {
    const septets = [n & 0x7f];
    for (let v = n >> 7; v > 0; v >>= 7) septets.unshift((v & 0x7f) | 0x80);
    out.push(...septets);
  }
  return der(0x06, new Uint8Array(out));
}

const utf8 = (s: string) => new TextEncoder().encode(s);

/** UTCTime, YYMMDDHHMMSSZ (certificates use it until 2050). */
function utcTime(ms: number): Bytes {
  const iso = new Date(ms).toISOString();
  return der(0x17, utf8(iso.slice(2, 19).replace(/[-T:]/g, "") + "Z"));
}

function extension(id: string, critical: boolean, value: Bytes): Bytes {
  return seq(oid(id), ...(critical ? [der(0x01, bytes(0xff))] : []), der(0x04, value));
}

/** WebCrypto's ECDSA signature (r ‖ s) as X.509 wants it: SEQUENCE { INTEGER r, INTEGER s }. */
function derSignature(raw: Bytes): Bytes {
  const half = raw.length / 2;
  return seq(integer(raw.subarray(0, half)), integer(raw.subarray(half)));
}

function pem(label: string, data: Bytes): string {
  const b64 = btoa(String.fromCharCode(...data)).replace(/.{64}/g, "$&\n").replace(/\n$/, "");
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

const ECDSA_SHA256 = seq(oid("1.2.840.10045.4.3.2"));
const DAY_MS = 86_400_000;

/**
 * A server certificate for `names` (DNS names), self-signed, valid from a day ago (clock skew) for
 * `days` days, and its PKCS#8 key.
 */
export async function selfSignedCert(
  commonName: string,
  names: readonly string[],
  days = 365,
  now = Date.now(),
): Promise<CertKey> {
  const keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
  ]);
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  const name = seq(der(0x31, seq(oid("2.5.4.3"), der(0x0c, utf8(commonName)))));
  const tbs = seq(
    der(0xa0, integer(bytes(2))), // v3
    integer(crypto.getRandomValues(new Uint8Array(16))),
    ECDSA_SHA256,
    name,
    seq(utcTime(now - DAY_MS), utcTime(now + days * DAY_MS)),
    name,
    spki,
    der(
      0xa3,
      seq(
        extension("2.5.29.19", true, seq()), // basicConstraints: not a CA
        extension("2.5.29.15", true, der(0x03, bytes(7, 0x80))), // keyUsage: digitalSignature
        extension("2.5.29.37", false, seq(oid("1.3.6.1.5.5.7.3.1"))), // extKeyUsage: serverAuth
        extension("2.5.29.17", false, seq(...names.map((n) => der(0x82, utf8(n))))), // DNS names
      ),
    ),
  );
  const signature = new Uint8Array(
    await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keys.privateKey, tbs),
  );
  const cert = seq(tbs, ECDSA_SHA256, der(0x03, bytes(0), derSignature(signature)));
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  return { cert: pem("CERTIFICATE", cert), key: pem("PRIVATE KEY", pkcs8) };
}
