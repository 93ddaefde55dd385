/**
 * The engines' side of TLS to the operator's xDS server (`--global-engine-xds-tls-secret`,
 * docs/global-engine.md "TLS between the engines and the operator"): a Secret in the engine's
 * namespace of the form cert-manager writes for a Certificate (type kubernetes.io/tls), read here
 * only for which keys it has and whether they look like PEM. Its files reach the engine's Pods by
 * a Secret volume, never through the operator:
 *
 * - `ca.crt` (required): the CA the engines check the operator's serving certificate with
 *   (envoyproxy/ratelimit `CONFIG_GRPC_XDS_SERVER_TLS_CACERT`; the engine adds it to the image's
 *   system roots, src/utils/tls.go `TlsConfigFromFiles`);
 * - `tls.crt`, `tls.key` (both or neither; required when the operator asks engines for a client
 *   certificate, `--global-engine-xds-client-ca-file`): the engines' client certificate
 *   (`CONFIG_GRPC_XDS_CLIENT_TLS_CERT`, `_KEY`).
 *
 * The engine reads these files once, when it starts (src/settings/settings.go
 * `ConfigGrpcXdsServerTlsConfig`), so the Pod template carries a digest of the Secret's version
 * and a rotated certificate rolls the engines.
 */
import type { KubeObject } from "../../api/object.ts";
import { textDigest } from "../hash.ts";
import { looksPem, NOT_TEXT, secretValue } from "./secret.ts";

/** The keys of the engines' xDS TLS Secret (those of a kubernetes.io/tls Secret). */
export const XDS_TLS_SECRET_KEYS = {
  /** Required: the CA (PEM) that signed the operator's xDS serving certificate. */
  caCert: "ca.crt",
  /** The engines' client certificate (PEM), with `tls.key`. */
  clientCert: "tls.crt",
  /** The client certificate's key (PEM). */
  clientKey: "tls.key",
} as const;

/** Where the engine's Pods find the xDS TLS Secret's files (a Secret volume). */
export const XDS_TLS_DIR = "/etc/ratelimit-engine/xds-tls";

/**
 * The engine Pod template's annotation holding a digest of the xDS TLS Secret's resourceVersion
 * (beside the Redis Secret's): a rotated certificate rolls the engines, which read it only when
 * they start.
 */
export const XDS_TLS_SECRET_DIGEST_ANNOTATION =
  "ratelimit.platform-project.io/xds-tls-secret-digest";

/** How the engines speak TLS to the operator's xDS server (from the operator's flags). */
export interface EngineXdsTls {
  /** The Secret (`--global-engine-xds-tls-secret`), in the engine's namespace. */
  secret: { namespace: string; name: string };
  /** True when the operator requires a client certificate (`--global-engine-xds-client-ca-file`). */
  clientCertRequired: boolean;
  /**
   * The name the operator's certificate must hold (`CONFIG_GRPC_XDS_SERVER_TLS_SAN`,
   * `--global-engine-xds-tls-server-name`); default the host the engines dial.
   */
  serverName?: string;
}

/** What a valid xDS TLS Secret says: whether it holds a client certificate. */
export interface XdsTlsFiles {
  clientCert: boolean;
}

/** The Secret read: its files, or every reason it is refused. */
export type XdsTlsSecretReading =
  | { ok: true; files: XdsTlsFiles }
  | { ok: false; problems: string[] };

/**
 * Reads the engines' xDS TLS Secret. Refused, every problem named and no value quoted: no
 * `ca.crt`; half a client certificate; no client certificate while the operator requires one; a
 * value that is not UTF-8, or not PEM of the right kind.
 */
export function readXdsTlsSecret(
  secret: KubeObject,
  tls: Pick<EngineXdsTls, "clientCertRequired">,
): XdsTlsSecretReading {
  const k = XDS_TLS_SECRET_KEYS;
  const name = `Secret ${secret.metadata.namespace}/${secret.metadata.name}`;
  const problems: string[] = [];
  const pem = (key: string, kind: "CERTIFICATE" | "PRIVATE KEY") => {
    const v = secretValue(secret, key);
    if (v === NOT_TEXT) problems.push(`${key} of ${name} is not UTF-8 text`);
    else if (v !== undefined && !looksPem(v, kind)) {
      problems.push(
        `${key} of ${name} is not ${
          kind === "CERTIFICATE" ? "a PEM certificate" : "a PEM private key"
        }`,
      );
    }
    return v === NOT_TEXT ? undefined : v;
  };
  const ca = pem(k.caCert, "CERTIFICATE");
  const cert = pem(k.clientCert, "CERTIFICATE");
  const key = pem(k.clientKey, "PRIVATE KEY");
  if (ca === undefined) {
    problems.push(
      `${name} has no ${k.caCert}: the CA the engines check the operator's xDS certificate with`,
    );
  }
  if ((cert === undefined) !== (key === undefined)) {
    problems.push(
      `half a client certificate in ${name}: ${
        cert === undefined ? k.clientKey : k.clientCert
      } without ${cert === undefined ? k.clientCert : k.clientKey}`,
    );
  } else if (cert === undefined && tls.clientCertRequired) {
    problems.push(
      `${name} has no ${k.clientCert} and ${k.clientKey}, and the operator requires a client certificate of the engines (--global-engine-xds-client-ca-file)`,
    );
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, files: { clientCert: cert !== undefined } };
}

/** The digest of the xDS TLS Secret's version that the Pod template carries. */
export function xdsTlsSecretDigest(resourceVersion: string): string {
  return textDigest(`xds-tls-secret\u0000${resourceVersion}`);
}

/** The host of `host:port` (brackets of an IPv6 address removed). */
export function hostOf(url: string): string {
  const m = /^\[([^\]]+)\](:\d+)?$/.exec(url);
  if (m) return m[1];
  const i = url.lastIndexOf(":");
  return i < 0 ? url : url.slice(0, i);
}

/**
 * The engine's settings for TLS to the xDS server (envoyproxy/ratelimit src/settings/settings.go,
 * src/provider/xds_grpc_sotw_provider.go `getGrpcTransportCredentials`): TLS on, the CA, the name
 * the server's certificate must hold (`serverName`, else the host dialed: what gRPC checks when
 * none is set), and the client certificate when the Secret has one.
 */
export function xdsTlsEnv(
  tls: EngineXdsTls,
  files: XdsTlsFiles,
  dialed: string,
): { name: string; value: string }[] {
  const file = (key: string) => `${XDS_TLS_DIR}/${key}`;
  const k = XDS_TLS_SECRET_KEYS;
  return [
    { name: "CONFIG_GRPC_XDS_SERVER_USE_TLS", value: "true" },
    { name: "CONFIG_GRPC_XDS_SERVER_TLS_CACERT", value: file(k.caCert) },
    { name: "CONFIG_GRPC_XDS_SERVER_TLS_SAN", value: tls.serverName ?? hostOf(dialed) },
    ...(files.clientCert
      ? [
        { name: "CONFIG_GRPC_XDS_CLIENT_TLS_CERT", value: file(k.clientCert) },
        { name: "CONFIG_GRPC_XDS_CLIENT_TLS_KEY", value: file(k.clientKey) },
      ]
      : []),
  ];
}

/** The Secret's files the Pod mounts. */
export function xdsTlsItems(files: XdsTlsFiles): string[] {
  const k = XDS_TLS_SECRET_KEYS;
  return [k.caCert, ...(files.clientCert ? [k.clientCert, k.clientKey] : [])];
}
