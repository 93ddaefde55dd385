/** Test certificates made with the machine's openssl in a temporary directory. */

/** PEM files of a test PKI. */
export interface Pki {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** Another CA: trusting only it must fail for serverCert. */
  otherCaCert: string;
  /** A server certificate for the same names as serverCert, signed by the other CA. */
  impostorCert: string;
  impostorKey: string;
}

async function openssl(dir: string, ...args: string[]): Promise<void> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("openssl", { args, cwd: dir, stdout: "null", stderr: "piped" })
      .output();
  } catch (err) {
    throw new Error(`these TLS tests need openssl on PATH: ${(err as Error).message}`);
  }
  if (!out.success) {
    throw new Error(`openssl ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

/**
 * Makes a CA, a server certificate for 127.0.0.1 and a client certificate for CN=alice; and another
 * CA with its own server certificate for 127.0.0.1.
 */
export async function makePki(): Promise<Pki> {
  const dir = await Deno.makeTempDir({ prefix: "kube-pki-" });
  const ca = (name: string) =>
    openssl(
      dir,
      "req",
      "-x509",
      ...EC,
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.crt`,
      "-days",
      "1",
      "-subj",
      `/CN=${name}`,
    );
  await ca("ca");
  await ca("other-ca");
  await Deno.writeTextFile(
    `${dir}/server.ext`,
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
  );
  await Deno.writeTextFile(
    `${dir}/client.ext`,
    "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n",
  );
  await Deno.copyFile(`${dir}/server.ext`, `${dir}/impostor.ext`);
  for (
    const [name, subject, issuer] of [
      ["server", "/CN=127.0.0.1", "ca"],
      ["client", "/CN=alice/O=platform", "ca"],
      ["impostor", "/CN=127.0.0.1", "other-ca"],
    ]
  ) {
    await openssl(
      dir,
      "req",
      ...EC,
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.csr`,
      "-subj",
      subject,
    );
    await openssl(
      dir,
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      `${issuer}.crt`,
      "-CAkey",
      `${issuer}.key`,
      "-CAcreateserial",
      "-out",
      `${name}.crt`,
      "-days",
      "1",
      "-extfile",
      `${name}.ext`,
    );
  }
  const read = (f: string) => Deno.readTextFile(`${dir}/${f}`);
  return {
    dir,
    caCert: await read("ca.crt"),
    serverCert: await read("server.crt"),
    serverKey: await read("server.key"),
    clientCert: await read("client.crt"),
    clientKey: await read("client.key"),
    otherCaCert: await read("other-ca.crt"),
    impostorCert: await read("impostor.crt"),
    impostorKey: await read("impostor.key"),
  };
}
