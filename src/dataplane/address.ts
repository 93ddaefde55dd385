/**
 * IP addresses as Envoy reads and prints them. `Network::Utility::parseInternetAddressNoThrow`
 * (source/common/network/utility.cc) tries `inet_pton(AF_INET)`, then `getaddrinfo` with
 * `AI_NUMERICHOST` and `AF_INET6`; an address prints as `addressAsString()`, which is glibc's
 * `inet_ntop` (with `%scope` when the IPv6 scope id is not 0). So `2001:DB8:0::1` and
 * `2001:db8::1` are one address, and `1.2.3.4:5678` is none. The model follows glibc 2.36's
 * functions (tests/dataplane/address_test.ts holds a table they produced); an IPv6 scope given as
 * an interface name (`fe80::1%eth0`) depends on the machine and is read as no address here.
 */

const DEC_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
/** glibc's `inet_pton4`: four decimal octets, no leading zero, nothing else. */
const IPV4 = new RegExp(`^${DEC_OCTET}(?:\\.${DEC_OCTET}){3}$`);

/** The four octets of a dotted IPv4 address, or undefined (`inet_pton(AF_INET)`). */
function ipv4Octets(text: string): number[] | undefined {
  return IPV4.test(text) ? text.split(".").map(Number) : undefined;
}

/** glibc's `inet_pton6`: the eight 16-bit words of an IPv6 address, or undefined. */
function ipv6Words(text: string): number[] | undefined {
  if (text === "") return undefined;
  let rest = text;
  if (rest.startsWith(":")) {
    if (!rest.startsWith("::")) return undefined;
    rest = rest.slice(1);
  }
  const words: number[] = [];
  let gap = -1;
  let digits = "";
  for (let i = 0; i < rest.length; i++) {
    const ch = rest[i];
    if (/[0-9a-fA-F]/.test(ch)) {
      if (digits.length === 4) return undefined;
      digits += ch;
      continue;
    }
    if (ch === ":") {
      if (digits === "") {
        if (gap >= 0) return undefined;
        gap = words.length;
        continue;
      }
      if (i === rest.length - 1) return undefined;
      if (words.length === 8) return undefined;
      words.push(parseInt(digits, 16));
      digits = "";
      continue;
    }
    if (ch === "." && words.length <= 6) {
      // An embedded IPv4 address ends the text: from the start of the current group on.
      const v4 = ipv4Octets(rest.slice(i - digits.length));
      if (!v4) return undefined;
      words.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      digits = "";
      i = rest.length;
      break;
    }
    return undefined;
  }
  if (digits !== "") {
    if (words.length === 8) return undefined;
    words.push(parseInt(digits, 16));
  }
  if (gap >= 0) {
    if (words.length === 8) return undefined; // "::" standing for no word at all
    words.splice(gap, 0, ...new Array<number>(8 - words.length).fill(0));
  }
  return words.length === 8 ? words : undefined;
}

/**
 * glibc's `inet_ntop6`: lower-case hex, the longest run of two or more zero words (the first of
 * equal runs) as `::`, and the last 32 bits in dotted form for `::a.b.c.d` and `::ffff:a.b.c.d`.
 */
function ipv6Text(words: readonly number[]): string {
  let best = { base: -1, len: 0 };
  let cur = { base: -1, len: 0 };
  for (let i = 0; i < 8; i++) {
    if (words[i] === 0) {
      cur = cur.base < 0 ? { base: i, len: 1 } : { base: cur.base, len: cur.len + 1 };
    } else if (cur.base >= 0) {
      if (best.base < 0 || cur.len > best.len) best = cur;
      cur = { base: -1, len: 0 };
    }
  }
  if (cur.base >= 0 && (best.base < 0 || cur.len > best.len)) best = cur;
  if (best.base >= 0 && best.len < 2) best = { base: -1, len: 0 };
  let out = "";
  for (let i = 0; i < 8; i++) {
    if (best.base >= 0 && i >= best.base && i < best.base + best.len) {
      if (i === best.base) out += ":";
      continue;
    }
    if (i !== 0) out += ":";
    if (i === 6 && best.base === 0 && (best.len === 6 || (best.len === 5 && words[5] === 0xffff))) {
      out += `${words[6] >> 8}.${words[6] & 0xff}.${words[7] >> 8}.${words[7] & 0xff}`;
      break;
    }
    out += words[i].toString(16);
  }
  if (best.base >= 0 && best.base + best.len === 8) out += ":";
  return out;
}

/**
 * The text Envoy gives the IP address `text` (`addressAsString()` of what
 * `parseInternetAddressNoThrow` parses), or undefined when it parses none: `2001:DB8:0::1` is
 * `2001:db8::1`, `::ffff:1.2.3.4` stays so, `1.2.3.4:5678`, `01.2.3.4` and ` 1.2.3.4` are none.
 */
export function canonicalAddress(text: string): string | undefined {
  if (ipv4Octets(text)) return text;
  const pct = text.indexOf("%");
  const scopeText = pct < 0 ? undefined : text.slice(pct + 1);
  if (scopeText !== undefined && !/^[0-9]{1,10}$/.test(scopeText)) return undefined;
  const scope = scopeText === undefined ? 0 : Number(scopeText);
  if (scope > 0xffffffff) return undefined;
  const words = ipv6Words(pct < 0 ? text : text.slice(0, pct));
  if (!words) return undefined;
  return scope === 0 ? ipv6Text(words) : `${ipv6Text(words)}%${scope}`;
}

/** The address of `text` as a list of bytes (4 or 16), for range tests; undefined when none. */
export function addressBytes(text: string): number[] | undefined {
  const v4 = ipv4Octets(text);
  if (v4) return v4;
  const pct = text.indexOf("%");
  const words = ipv6Words(pct < 0 ? text : text.slice(0, pct));
  return words?.flatMap((w) => [w >> 8, w & 0xff]);
}
