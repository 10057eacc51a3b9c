/* SPDX-License-Identifier: MIT */
/*
 * A read-only JSON scanner that maps a path to a line and column. It exists
 * because jansson keeps no source positions, and matrix-file errors must point
 * into the file (see jsonpos.h). Used only when reporting an error.
 */
#include "jsonpos.h"

/* Nesting bound for the scanner's recursion (jansson's own limit is 2048). */
#define JSONPOS_MAX_DEPTH 2048

struct scanner {
        const char *s;
        size_t len;
        size_t pos;
        unsigned line;
        unsigned col; /* column of the character at pos */
};

static int peek(const struct scanner *sc)
{
        return sc->pos < sc->len ? (unsigned char)sc->s[sc->pos] : -1;
}

/* Advance one byte, keeping line and column (columns count code points, not bytes). */
static void advance(struct scanner *sc)
{
        unsigned char c = (unsigned char)sc->s[sc->pos++];

        if (c == '\n') {
                sc->line++;
                sc->col = 1;
                return;
        }
        /* Inside a multi-byte character: the column moves when the character ends. */
        if (sc->pos < sc->len && ((unsigned char)sc->s[sc->pos] & 0xc0) == 0x80)
                return;
        sc->col++;
}

static void skip_ws(struct scanner *sc)
{
        for (int c = peek(sc); c == ' ' || c == '\t' || c == '\n' || c == '\r'; c = peek(sc))
                advance(sc);
}

/* Append code point cp as UTF-8 (decoded \u escapes, to compare keys). */
static void put_utf8(struct mx_buf *b, uint32_t cp)
{
        char u[4];
        size_t n;

        if (cp < 0x80) {
                u[0] = (char)cp;
                n = 1;
        } else if (cp < 0x800) {
                u[0] = (char)(0xc0 | (cp >> 6));
                u[1] = (char)(0x80 | (cp & 0x3f));
                n = 2;
        } else if (cp < 0x10000) {
                u[0] = (char)(0xe0 | (cp >> 12));
                u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                u[2] = (char)(0x80 | (cp & 0x3f));
                n = 3;
        } else {
                u[0] = (char)(0xf0 | (cp >> 18));
                u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
                u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
                u[3] = (char)(0x80 | (cp & 0x3f));
                n = 4;
        }
        mx_buf_add(b, u, n);
}

/* Read the four hex digits of a \u escape. */
static int hex4(struct scanner *sc, uint32_t *ret)
{
        uint32_t v = 0;

        for (int i = 0; i < 4; i++) {
                int c = peek(sc);

                if (c >= '0' && c <= '9')
                        v = v * 16 + (uint32_t)(c - '0');
                else if (c >= 'a' && c <= 'f')
                        v = v * 16 + (uint32_t)(c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        v = v * 16 + (uint32_t)(c - 'A' + 10);
                else
                        return -EBADMSG;
                advance(sc);
        }
        *ret = v;
        return 0;
}

/* Scan a string at pos (which must be '"'); decode it into out when out is not NULL. */
static int scan_string(struct scanner *sc, struct mx_buf *out)
{
        if (peek(sc) != '"')
                return -EBADMSG;
        advance(sc);
        for (;;) {
                int c = peek(sc);

                if (c < 0)
                        return -EBADMSG;
                if (c == '"') {
                        advance(sc);
                        return 0;
                }
                if (c != '\\') {
                        if (out)
                                mx_buf_putc(out, (char)c);
                        advance(sc);
                        continue;
                }
                advance(sc);
                c = peek(sc);
                if (c < 0)
                        return -EBADMSG;
                advance(sc);
                if (c == 'u') {
                        uint32_t cp, lo;

                        if (hex4(sc, &cp) < 0)
                                return -EBADMSG;
                        if (cp >= 0xd800 && cp < 0xdc00 && peek(sc) == '\\') {
                                advance(sc);
                                if (peek(sc) != 'u')
                                        return -EBADMSG;
                                advance(sc);
                                if (hex4(sc, &lo) < 0)
                                        return -EBADMSG;
                                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        }
                        if (out)
                                put_utf8(out, cp);
                        continue;
                }
                if (out) {
                        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
                        const char *p = strchr(from, c);

                        if (!p)
                                return -EBADMSG;
                        mx_buf_putc(out, to[p - from]);
                }
        }
}

/* Skip one value of any type; for scalars, a run of token characters is enough (the text parsed). */
static int skip_value(struct scanner *sc, unsigned depth);

/* Skip the members of an object or elements of an array at pos ('{' or '['). */
static int skip_container(struct scanner *sc, unsigned depth)
{
        int open = peek(sc), close = open == '{' ? '}' : ']';
        int r;

        if (depth > JSONPOS_MAX_DEPTH)
                return -EBADMSG;
        advance(sc);
        skip_ws(sc);
        if (peek(sc) == close) {
                advance(sc);
                return 0;
        }
        for (;;) {
                skip_ws(sc);
                if (open == '{') {
                        r = scan_string(sc, NULL);
                        if (r < 0)
                                return r;
                        skip_ws(sc);
                        if (peek(sc) != ':')
                                return -EBADMSG;
                        advance(sc);
                }
                r = skip_value(sc, depth + 1);
                if (r < 0)
                        return r;
                skip_ws(sc);
                if (peek(sc) == ',') {
                        advance(sc);
                        continue;
                }
                if (peek(sc) != close)
                        return -EBADMSG;
                advance(sc);
                return 0;
        }
}

static int skip_value(struct scanner *sc, unsigned depth)
{
        int c;

        skip_ws(sc);
        c = peek(sc);
        if (c == '{' || c == '[')
                return skip_container(sc, depth);
        if (c == '"')
                return scan_string(sc, NULL);
        if (c < 0)
                return -EBADMSG;
        /* number, true, false, null: a run of token characters */
        while ((c = peek(sc)) >= 0 &&
               (strchr("+-.eE", c) || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')))
                advance(sc);
        return 0;
}

/*
 * Past the value at pos of an object or array whose closing character is close, to the next member or
 * element: 0 there, -ENOENT at close (no more), -EBADMSG when neither ',' nor close follows.
 */
static int skip_to_next(struct scanner *sc, char close)
{
        int r = skip_value(sc, 1);

        if (r < 0)
                return r;
        skip_ws(sc);
        if (peek(sc) == ',') {
                advance(sc);
                return 0;
        }
        return peek(sc) == close ? -ENOENT : -EBADMSG;
}

/* Move from an object's '{' to the value of member key; on return pos is at the value. */
static int find_member(struct scanner *sc, const char *key, unsigned *ret_key_line, unsigned *ret_key_col)
{
        _cleanup_buf_ struct mx_buf name = MX_BUF_INIT;
        int r;

        advance(sc);
        skip_ws(sc);
        if (peek(sc) == '}')
                return -ENOENT;
        for (;;) {
                unsigned kl, kc;

                skip_ws(sc);
                kl = sc->line;
                kc = sc->col;
                mx_buf_reset(&name);
                r = scan_string(sc, &name);
                if (r < 0)
                        return r;
                skip_ws(sc);
                if (peek(sc) != ':')
                        return -EBADMSG;
                advance(sc);
                skip_ws(sc);
                if (name.data && strlen(name.data) == name.len && streq(name.data, key)) {
                        *ret_key_line = kl;
                        *ret_key_col = kc;
                        return 0;
                }
                r = skip_to_next(sc, '}');
                if (r < 0)
                        return r;
        }
}

/* Move from an array's '[' to element index. */
static int find_element(struct scanner *sc, size_t index)
{
        int r;

        advance(sc);
        skip_ws(sc);
        if (peek(sc) == ']')
                return -ENOENT;
        for (size_t i = 0;; i++) {
                skip_ws(sc);
                if (i == index)
                        return 0;
                r = skip_to_next(sc, ']');
                if (r < 0)
                        return r;
        }
}

int mx_jsonpos_find(const char *text, size_t len, const struct mx_jsonpos_step *path, size_t n,
                    bool want_key, unsigned *ret_line, unsigned *ret_col)
{
        struct scanner sc = { .s = text, .len = len, .line = 1, .col = 1 };
        unsigned key_line = 0, key_col = 0;
        int r;

        /* A UTF-8 byte order mark is not a character of the document. */
        if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
                sc.pos = 3;
        skip_ws(&sc);
        for (size_t i = 0; i < n; i++) {
                int c = peek(&sc);

                if (path[i].key) {
                        if (c != '{')
                                return c < 0 ? -EBADMSG : -ENOENT;
                        r = find_member(&sc, path[i].key, &key_line, &key_col);
                } else {
                        if (c != '[')
                                return c < 0 ? -EBADMSG : -ENOENT;
                        r = find_element(&sc, path[i].index);
                }
                if (r < 0)
                        return r;
        }
        if (peek(&sc) < 0)
                return -EBADMSG;
        if (want_key && n > 0 && path[n - 1].key) {
                *ret_line = key_line;
                *ret_col = key_col;
        } else {
                *ret_line = sc.line;
                *ret_col = sc.col;
        }
        return 0;
}
