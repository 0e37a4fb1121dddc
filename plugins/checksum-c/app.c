/*
 * Example plugin in C: checksums and base32.
 *
 * - `checksum`: CRC-32 (IEEE, as zip and PNG use it), Adler-32 (zlib) or
 *   FNV-1a (32-bit) of a text's UTF-8 bytes.
 * - `base32`: RFC 4648 base32 (with `=` padding) of a text, or back.
 *
 * Build: `cargo xtask guests checksum-c`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolhost_guest.h"

static uint32_t crc32(const uint8_t *data, size_t len) {
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < len; i++) {
        crc ^= data[i];
        for (int bit = 0; bit < 8; bit++) crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
    }
    return ~crc;
}

static uint32_t adler32(const uint8_t *data, size_t len) {
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < len; i++) {
        a = (a + data[i]) % 65521;
        b = (b + a) % 65521;
    }
    return (b << 16) | a;
}

static uint32_t fnv1a32(const uint8_t *data, size_t len) {
    uint32_t hash = 0x811c9dc5u;
    for (size_t i = 0; i < len; i++) hash = (hash ^ data[i]) * 0x01000193u;
    return hash;
}

static th_status checksum(th_cx *cx, const cJSON *args) {
    const char *text = th_arg_string(args, "text", "");
    /* Missing or null (optional means nullable): the default. */
    const char *algorithm = th_arg_string(args, "algorithm", "crc32");
    const uint8_t *bytes = (const uint8_t *)text;
    size_t len = strlen(text);
    uint32_t value;
    if (strcmp(algorithm, "crc32") == 0) {
        value = crc32(bytes, len);
    } else if (strcmp(algorithm, "adler32") == 0) {
        value = adler32(bytes, len);
    } else {
        value = fnv1a32(bytes, len);
    }
    char hex[9];
    snprintf(hex, sizeof hex, "%08x", (unsigned)value);
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "algorithm", algorithm);
    cJSON_AddStringToObject(out, "hex", hex);
    cJSON_AddNumberToObject(out, "value", value);
    cJSON_AddNumberToObject(out, "bytes", (double)len);
    return th_return(cx, out);
}

static const char BASE32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

static char *base32_encode(const uint8_t *data, size_t len) {
    char *out = malloc((len + 4) / 5 * 8 + 1);
    size_t o = 0;
    for (size_t i = 0; i < len; i += 5) {
        uint8_t block[5] = {0};
        size_t n = len - i < 5 ? len - i : 5;
        memcpy(block, data + i, n);
        uint64_t bits = 0;
        for (int k = 0; k < 5; k++) bits = (bits << 8) | block[k];
        /* Output characters for n bytes: ceil(n * 8 / 5); the rest is padding. */
        size_t chars = (n * 8 + 4) / 5;
        for (size_t k = 0; k < 8; k++) {
            out[o++] = k < chars ? BASE32[(bits >> (35 - 5 * k)) & 31] : '=';
        }
    }
    out[o] = '\0';
    return out;
}

/* Decodes into a malloc'd NUL-terminated buffer; NULL (and `*bad` set to the
 * offending position) if `text` is not base32. */
static uint8_t *base32_decode(const char *text, size_t *len, size_t *bad) {
    size_t in = strlen(text);
    uint8_t *out = malloc(in * 5 / 8 + 1);
    uint64_t bits = 0;
    int have = 0;
    size_t o = 0;
    for (size_t i = 0; i < in; i++) {
        char c = text[i];
        if (c == '=') {
            /* Padding ends the data; only more padding may follow. */
            for (size_t j = i; j < in; j++) {
                if (text[j] != '=') {
                    *bad = j;
                    free(out);
                    return NULL;
                }
            }
            break;
        }
        if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
        const char *at = c ? strchr(BASE32, c) : NULL;
        if (at == NULL) {
            *bad = i;
            free(out);
            return NULL;
        }
        bits = (bits << 5) | (uint64_t)(at - BASE32);
        have += 5;
        if (have >= 8) {
            have -= 8;
            out[o++] = (uint8_t)(bits >> have);
        }
    }
    out[o] = '\0';
    *len = o;
    return out;
}

/* True if `bytes` is valid UTF-8 (no overlongs, surrogates or values past U+10FFFF). */
static bool valid_utf8(const uint8_t *bytes, size_t len) {
    for (size_t i = 0; i < len;) {
        uint8_t b = bytes[i];
        size_t n = b < 0x80 ? 0 : (b >> 5) == 0x6 ? 1 : (b >> 4) == 0xe ? 2 : (b >> 3) == 0x1e ? 3 : 4;
        if (n == 4 || (n > 0 && i + n >= len)) return false;
        uint32_t cp = n == 0 ? b : b & (0x3f >> n);
        for (size_t k = 1; k <= n; k++) {
            if ((bytes[i + k] & 0xc0) != 0x80) return false;
            cp = (cp << 6) | (bytes[i + k] & 0x3f);
        }
        static const uint32_t least[] = {0, 0x80, 0x800, 0x10000};
        if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += n + 1;
    }
    return true;
}

static th_status base32(th_cx *cx, const cJSON *args) {
    const char *text = th_arg_string(args, "text", "");
    const char *mode = th_arg_string(args, "mode", "encode"); /* missing or null: encode */
    cJSON *out = cJSON_CreateObject();
    if (strcmp(mode, "encode") == 0) {
        char *encoded = base32_encode((const uint8_t *)text, strlen(text));
        cJSON_AddStringToObject(out, "text", encoded);
        free(encoded);
        return th_return(cx, out);
    }
    size_t len, bad;
    uint8_t *decoded = base32_decode(text, &len, &bad);
    if (decoded == NULL) {
        cJSON_Delete(out);
        return th_invalid(cx, "`text` is not base32: unexpected character at position %zu", bad);
    }
    if (strlen((const char *)decoded) != len || !valid_utf8(decoded, len)) {
        free(decoded);
        cJSON_Delete(out);
        return th_fail(cx, "the decoded bytes are not UTF-8 text");
    }
    cJSON_AddStringToObject(out, "text", (const char *)decoded);
    cJSON_AddNumberToObject(out, "bytes", (double)len);
    free(decoded);
    return th_return(cx, out);
}

TOOLHOST_TOOLS(
    {.name = "checksum",
     .description = "Computes a 32-bit checksum of a text's UTF-8 bytes: CRC-32 (IEEE, as in "
                    "zip and PNG), Adler-32 (zlib) or FNV-1a.",
     .input_schema = TH_JSON({
         "type": "object",
         "required": ["text"],
         "properties": {
             "text": {"type": "string", "description": "The text to checksum."},
             "algorithm": {"type": ["string", "null"], "enum": ["crc32", "adler32", "fnv1a", null],
                           "default": "crc32", "description": "The checksum. Defaults to `crc32`."}
         }
     }),
     .run = checksum},
    {.name = "base32",
     .description = "Encodes a text as RFC 4648 base32 (with padding), or decodes base32 "
                    "back to text (case-insensitive).",
     .input_schema = TH_JSON({
         "type": "object",
         "required": ["text"],
         "properties": {
             "text": {"type": "string", "description": "The text to encode, or the base32 to decode."},
             "mode": {"type": ["string", "null"], "enum": ["encode", "decode", null],
                      "default": "encode", "description": "Which way. Defaults to `encode`."}
         }
     }),
     .run = base32},
)
