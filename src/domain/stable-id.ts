/**
 * An id derived from a key alone, so every fold (inline, rebuild, another process) names the same
 * thing alike. The domain may not use node:crypto (layer rules), and these ids need no secrecy,
 * only spread: 128-bit FNV-1a of the key's UTF-16 code units, stamped as an RFC 9562 version-8 UUID.
 */
const FNV_OFFSET = 0x6c62272e07bb014262b821756295c58dn;
const FNV_PRIME = 0x0000000001000000000000000000013bn;
const MASK_128 = (1n << 128n) - 1n;

export function stableUuidOf(key: string): string {
  let h = FNV_OFFSET;
  for (let i = 0; i < key.length; i++) {
    h ^= BigInt(key.charCodeAt(i));
    h = (h * FNV_PRIME) & MASK_128;
  }
  const hex = h.toString(16).padStart(32, '0').split('');
  hex[12] = '8'; // version 8: custom
  hex[16] = ((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16); // variant 10xx
  const s = hex.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}
