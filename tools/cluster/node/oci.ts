/**
 * Single-file images written as OCI image-layout archives, with no registry and no image tool:
 * a tar of one uncompressed layer, its config and manifest, and `index.json` naming the image, as
 * `ctr images import` reads it. Used for the real node's pause and test images.
 */
import { createHash } from "node:crypto";
import { concatBytes } from "../../../src/kube/bounded_read.ts";

/** One file of a tar archive. */
export interface TarEntry {
  name: string;
  data: Uint8Array;
  /** Permission bits; default 0o644. */
  mode?: number;
}

const BLOCK = 512;
const enc = new TextEncoder();

function octal(buf: Uint8Array, off: number, len: number, value: number): void {
  buf.set(enc.encode(value.toString(8).padStart(len - 1, "0") + "\0"), off);
}

function header(name: string, size: number, mode: number, type: "0" | "5"): Uint8Array {
  if (enc.encode(name).length > 99) throw new Error(`tar name too long: ${name}`);
  const h = new Uint8Array(BLOCK);
  h.set(enc.encode(name), 0);
  octal(h, 100, 8, mode);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, size);
  // A fixed time keeps the digests, and so the image ids, reproducible.
  octal(h, 136, 12, 0);
  h.set(enc.encode(type), 156);
  h.set(enc.encode("ustar\0" + "00"), 257);
  h.fill(0x20, 148, 156); // the checksum is summed with its own field as spaces
  const sum = h.reduce((a, b) => a + b, 0);
  h.set(enc.encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
  return h;
}

/** A ustar archive of `entries` (plain files; a name ending in "/" is a directory). */
export function tar(entries: readonly TarEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const e of entries) {
    const dir = e.name.endsWith("/");
    parts.push(
      header(e.name, dir ? 0 : e.data.length, e.mode ?? (dir ? 0o755 : 0o644), dir ? "5" : "0"),
    );
    if (dir) continue;
    parts.push(e.data);
    const pad = (BLOCK - e.data.length % BLOCK) % BLOCK;
    if (pad) parts.push(new Uint8Array(pad));
  }
  parts.push(new Uint8Array(2 * BLOCK));
  return concatBytes(parts);
}

function sha256(data: Uint8Array): string {
  return "sha256:" + createHash("sha256").update(data).digest("hex");
}

/** What goes into a single-binary image. */
export interface ImageSpec {
  /** Full reference, e.g. `localhost/platform-project/pause:1`. */
  ref: string;
  /** The binary, placed at `/<name>` and used as the entrypoint. */
  name: string;
  binary: Uint8Array;
  /** Default `user` of the image config (e.g. "65532:65532"). */
  user?: string;
}

/** An OCI image-layout archive holding one image of one layer with one executable. */
export function ociArchive(spec: ImageSpec): Uint8Array {
  const layer = tar([{ name: spec.name, data: spec.binary, mode: 0o755 }]);
  const config = enc.encode(JSON.stringify({
    architecture: "amd64",
    os: "linux",
    config: { Entrypoint: [`/${spec.name}`], ...(spec.user ? { User: spec.user } : {}) },
    rootfs: { type: "layers", diff_ids: [sha256(layer)] },
  }));
  const desc = (mediaType: string, data: Uint8Array) => ({
    mediaType,
    digest: sha256(data),
    size: data.length,
  });
  const manifest = enc.encode(JSON.stringify({
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.manifest.v1+json",
    config: desc("application/vnd.oci.image.config.v1+json", config),
    layers: [desc("application/vnd.oci.image.layer.v1.tar", layer)],
  }));
  const tag = spec.ref.slice(spec.ref.lastIndexOf(":") + 1);
  const index = enc.encode(JSON.stringify({
    schemaVersion: 2,
    manifests: [{
      ...desc("application/vnd.oci.image.manifest.v1+json", manifest),
      // ctr names the image after the first annotation; other tools read the second.
      annotations: {
        "io.containerd.image.name": spec.ref,
        "org.opencontainers.image.ref.name": tag,
      },
    }],
  }));
  const blob = (data: Uint8Array): TarEntry => ({
    name: `blobs/sha256/${sha256(data).slice("sha256:".length)}`,
    data,
  });
  return tar([
    { name: "oci-layout", data: enc.encode('{"imageLayoutVersion":"1.0.0"}') },
    { name: "index.json", data: index },
    { name: "blobs/", data: new Uint8Array() },
    { name: "blobs/sha256/", data: new Uint8Array() },
    blob(layer),
    blob(config),
    blob(manifest),
  ]);
}
