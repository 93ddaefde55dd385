/**
 * The metrics endpoint's self-signed certificate is a certificate TLS clients accept: Deno serves
 * with it, a client that trusts it verifies the signature and the name, one that trusts another
 * does not; openssl reads the fields it claims.
 */
import assert from "node:assert/strict";
import { selfSignedCert } from "../../src/cli/self_signed.ts";

/** Serves "ok" over HTTPS with `tls` on 127.0.0.1 while `fn` runs. */
async function serving(
  tls: { cert: string; key: string },
  fn: (port: number) => Promise<void>,
): Promise<void> {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, ...tls, onListen() {} },
    () => new Response("ok"),
  );
  try {
    await fn(server.addr.port);
  } finally {
    await server.shutdown();
  }
}

Deno.test("a client that trusts the certificate verifies it for its name; one that trusts another refuses it", async () => {
  const tls = await selfSignedCert("platform-operator", ["localhost"]);
  const other = await selfSignedCert("platform-operator", ["localhost"]);
  await serving(tls, async (port) => {
    const trusting = Deno.createHttpClient({ caCerts: [tls.cert] });
    const wrong = Deno.createHttpClient({ caCerts: [other.cert] });
    try {
      const res = await fetch(`https://localhost:${port}/`, { client: trusting });
      assert.equal(await res.text(), "ok");
      await assert.rejects(fetch(`https://localhost:${port}/`, { client: wrong }));
      // Issued for localhost only.
      await assert.rejects(fetch(`https://127.0.0.1:${port}/`, { client: trusting }));
    } finally {
      trusting.close();
      wrong.close();
    }
  });
});

Deno.test("openssl reads what the certificate claims: subject, validity, server use, the names", async () => {
  const now = Date.UTC(2026, 5, 1, 12, 0, 0);
  const { cert } = await selfSignedCert("platform-operator", ["localhost", "a.example"], 365, now);
  const out = await new Deno.Command("openssl", {
    args: [
      "x509",
      "-noout",
      "-subject",
      "-issuer",
      "-dates",
      "-ext",
      "basicConstraints,keyUsage,extendedKeyUsage,subjectAltName",
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = out.stdin.getWriter();
  await writer.write(new TextEncoder().encode(cert));
  await writer.close();
  const { stdout, stderr, success } = await out.output();
  const text = new TextDecoder().decode(stdout);
  assert.ok(success, new TextDecoder().decode(stderr));
  for (
    const want of [
      /^subject=CN\s?=\s?platform-operator$/m,
      /^issuer=CN\s?=\s?platform-operator$/m,
      /^notBefore=May 31 12:00:00 2026 GMT$/m,
      /^notAfter=Jun {2}1 12:00:00 2027 GMT$/m,
      /CA:FALSE/,
      /Digital Signature/,
      /TLS Web Server Authentication/,
      /DNS:localhost, DNS:a\.example/,
    ]
  ) assert.match(text, want);
});
