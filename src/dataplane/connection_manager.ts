/**
 * What Envoy's HTTP connection manager does to a request before any HTTP filter sees it, as Istio
 * configures it (source/common/http/conn_manager_utility.cc: `maybeNormalizePath` and
 * `mutateRequestHeaders`; Istio's pilot/pkg/networking/core listener builder and
 * pkg/bootstrap/config.go). Every header matcher, rate limit action and route of the model reads
 * the request this gives, never the raw one:
 *
 * - the fragment (`#...`) leaves the path: Istio sets `http_reject_path_with_fragment: false`, so
 *   Envoy strips it instead of refusing the request;
 * - hop-by-hop headers go: `keep-alive`, `proxy-connection`, `transfer-encoding` always,
 *   `connection` and `upgrade` unless the request is an upgrade (`Upgrade` present and a
 *   `Connection` token `upgrade`);
 * - `x-envoy-internal` goes, and comes back as `true` only on an internal request (below); on any
 *   other request the internal `x-envoy-*` request headers go (`cleanInternalHeaders`), and at a
 *   gateway (an edge request) three more;
 * - the client address: a gateway (`use_remote_address: true`, `xff_num_trusted_hops` =
 *   `gatewayTopology.numTrustedProxies`, 0 by default) takes its peer and appends the peer to
 *   `x-forwarded-for`; a sidecar (`use_remote_address: false`, no trusted hops) takes the last
 *   `x-forwarded-for` entry when it is an IP address (address.ts), else the peer;
 * - `x-forwarded-proto`: a gateway overwrites it (with no trusted hops), a sidecar sets it when
 *   missing; `https` over TLS, else `http`;
 * - `x-request-id`: a gateway replaces it (an edge request), a sidecar adds one when missing. The
 *   model numbers them (a UUID-shaped counter per proxy), so runs stay reproducible;
 * - an internal request: before Envoy 1.33 one whose single trusted address is private (RFC 1918,
 *   loopback, fd00::/8); from 1.33 none, as Istio sets no `internal_address_config` by default.
 */
import { addressBytes, canonicalAddress } from "./address.ts";
import {
  HOP_BY_HOP_HEADERS as HOP_BY_HOP,
  INTERNAL_ENVOY_HEADERS as INTERNAL_ONLY,
} from "../api/envoy.ts";
import type { Request } from "./request.ts";

/** How Istio sets up the connection manager of one proxy. */
export interface Downstream {
  /** `use_remote_address`: true on Istio's gateways, false on sidecars' inbound listeners. */
  readonly useRemoteAddress: boolean;
  /** `xff_num_trusted_hops`: 0 unless a gateway's `gatewayTopology.numTrustedProxies` says. */
  readonly xffNumTrustedHops: number;
  /** Private addresses are internal: Envoy's default before `explicit_internal_address_config`. */
  readonly privateIsInternal: boolean;
}

/** The request the filters see, and the client address the connection manager settled on. */
export interface Admitted {
  readonly request: Request;
  readonly remoteAddress: string | undefined;
}

/** Removed too unless the request is an upgrade. */
const UPGRADE_HEADERS = ["connection", "upgrade"] as const;

/** Removed too from an edge request (a gateway's, not internal). */
const EDGE_ONLY = [
  "x-envoy-decorator-operation",
  "x-envoy-downstream-service-cluster",
  "x-envoy-downstream-service-node",
] as const;

/** The path without its fragment (`#` and what follows), as Istio's Envoys hold it. */
export function withoutFragment(path: string): string {
  const hash = path.indexOf("#");
  return hash < 0 ? path : path.slice(0, hash);
}

/** Request headers as an editable list of `[name, value]`, names as the client wrote them. */
type Pairs = [string, string][];

function valueOf(pairs: Pairs, name: string): string | undefined {
  let found: string | undefined;
  for (const [k, v] of pairs) {
    if (k.toLowerCase() !== name) continue;
    found = found === undefined ? v : `${found},${v}`;
  }
  return found;
}

function remove(pairs: Pairs, name: string): Pairs {
  return pairs.filter(([k]) => k.toLowerCase() !== name);
}

/** Sets `name` to `value`, in place of every value it had. */
function set(pairs: Pairs, name: string, value: string): Pairs {
  return [...remove(pairs, name), [name, value]];
}

/** `Utility::isUpgrade`: an `Upgrade` header and a `Connection` token `upgrade`. */
function isUpgrade(pairs: Pairs): boolean {
  const connection = valueOf(pairs, "connection");
  return valueOf(pairs, "upgrade") !== undefined && connection !== undefined &&
    connection.split(",").some((t) => t.trim().toLowerCase() === "upgrade");
}

/**
 * `Utility::getLastAddressFromXFF`: the entry `skip` places from the end of x-forwarded-for
 * (spaces around it trimmed), when Envoy parses it as an IP address; `single` when it is the only
 * entry. A trailing comma leaves the whole value, which parses as no address.
 */
export function lastAddressFromXff(
  xff: string | undefined,
  skip: number,
): { address?: string; single: boolean } {
  if (xff === undefined) return { single: false };
  let rest = xff;
  for (let i = 0; i < skip; i++) {
    const comma = rest.lastIndexOf(",");
    if (comma < 0) return { single: false };
    rest = rest.slice(0, comma);
  }
  const comma = rest.lastIndexOf(",");
  if (comma >= 0 && comma + 1 < rest.length) rest = rest.slice(comma + 1);
  const address = canonicalAddress(rest.replace(/^[ \t\f\v\n\r]+|[ \t\f\v\n\r]+$/g, ""));
  return address === undefined ? { single: false } : { address, single: comma < 0 && skip === 0 };
}

/** Envoy's default internal addresses (`Network::Utility::isInternalAddress`). */
function isPrivate(address: string): boolean {
  const b = addressBytes(address);
  if (!b) return false;
  if (b.length === 4) {
    return b[0] === 10 || (b[0] === 192 && b[1] === 168) ||
      (b[0] === 172 && b[1] >= 16 && b[1] <= 31) ||
      (b[0] === 127 && b[1] === 0 && b[2] === 0 && b[3] === 1);
  }
  return b[0] === 0xfd || b.every((x, i) => x === (i === 15 ? 1 : 0));
}

/** A request id shaped as a version-4 UUID, from a proxy's count of the ids it made. */
export function requestIdOf(n: number): string {
  return `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;
}

/**
 * The request as the filters of a proxy set up as `d` see it (see the module comment), with the
 * client address it trusts. `nextRequestId` gives an id when the proxy makes one.
 */
export function admit(req: Request, d: Downstream, nextRequestId: () => string): Admitted {
  let pairs: Pairs = Object.entries(req.headers ?? {});
  if (!isUpgrade(pairs)) { for (const h of UPGRADE_HEADERS) pairs = remove(pairs, h); }
  for (const h of [...HOP_BY_HOP, "x-envoy-internal"]) pairs = remove(pairs, h);
  const peer = req.peer === undefined ? undefined : canonicalAddress(req.peer) ?? req.peer;
  const proto = req.tls ? "https" : "http";
  const xff = valueOf(pairs, "x-forwarded-for");
  let remote: string | undefined;
  let trusted: boolean;
  if (d.useRemoteAddress) {
    trusted = xff === undefined;
    if (d.xffNumTrustedHops > 0) remote = lastAddressFromXff(xff, d.xffNumTrustedHops - 1).address;
    remote ??= peer;
    if (peer !== undefined) {
      pairs = set(pairs, "x-forwarded-for", xff === undefined ? peer : `${xff},${peer}`);
    }
    if (d.xffNumTrustedHops === 0 || valueOf(pairs, "x-forwarded-proto") === undefined) {
      pairs = set(pairs, "x-forwarded-proto", proto);
    }
  } else {
    const last = lastAddressFromXff(xff, d.xffNumTrustedHops);
    remote = last.address;
    trusted = last.single;
  }
  if (valueOf(pairs, "x-forwarded-proto") === undefined) {
    pairs = set(pairs, "x-forwarded-proto", proto);
  }
  const internal = trusted && remote !== undefined && d.privateIsInternal && isPrivate(remote);
  remote ??= peer;
  const edge = !internal && d.useRemoteAddress;
  if (internal) pairs = set(pairs, "x-envoy-internal", "true");
  else {
    for (const h of INTERNAL_ONLY) pairs = remove(pairs, h);
    if (edge) { for (const h of EDGE_ONLY) pairs = remove(pairs, h); }
  }
  if (edge && remote !== undefined && canonicalAddress(remote) !== undefined) {
    pairs = set(pairs, "x-envoy-external-address", remote);
  }
  if (edge || valueOf(pairs, "x-request-id") === undefined) {
    pairs = set(pairs, "x-request-id", nextRequestId());
  }
  const request: Request = {
    ...req,
    path: withoutFragment(req.path),
    headers: Object.fromEntries(pairs),
  };
  return { request, remoteAddress: remote };
}
