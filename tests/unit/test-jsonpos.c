/* SPDX-License-Identifier: MIT */
#include "test.h"
#include "jsonpos.h"

static void at(const char *text, const struct mx_jsonpos_step *path, size_t n, bool want_key, unsigned line,
               unsigned col)
{
        unsigned l = 0, c = 0;

        ASSERT_OK(mx_jsonpos_find(text, strlen(text), path, n, want_key, &l, &c));
        ASSERT_EQ(l, line);
        ASSERT_EQ(c, col);
}

TEST(objects_and_arrays)
{
        const char *text = "{\n  \"a\": [1, {\"b\": true}],\n  \"c\": \"x\"\n}";

        at(text, NULL, 0, false, 1, 1);
        at(text, (struct mx_jsonpos_step[]){ { "a", 0 } }, 1, false, 2, 8);
        at(text, (struct mx_jsonpos_step[]){ { "a", 0 } }, 1, true, 2, 3);
        at(text, (struct mx_jsonpos_step[]){ { "a", 0 }, { NULL, 1 } }, 2, false, 2, 12);
        at(text, (struct mx_jsonpos_step[]){ { "a", 0 }, { NULL, 1 }, { "b", 0 } }, 3, false, 2, 18);
        at(text, (struct mx_jsonpos_step[]){ { "a", 0 }, { NULL, 1 }, { "b", 0 } }, 3, true, 2, 13);
        at(text, (struct mx_jsonpos_step[]){ { "c", 0 } }, 1, true, 3, 3);
}

TEST(skips_strings_with_brackets_and_escapes)
{
        /* Brackets and quotes inside strings must not confuse the scanner. */
        const char *text = "{\"s\": \"]}\\\"{[\", \"t\": [\"a,b\", \"]\"], \"u\": 1}";

        at(text, (struct mx_jsonpos_step[]){ { "t", 0 }, { NULL, 1 } }, 2, false, 1, 30);
        at(text, (struct mx_jsonpos_step[]){ { "u", 0 } }, 1, true, 1, 36);
}

TEST(escaped_keys_and_unicode)
{
        /* "\u00e9" is é; "\ud83d\ude00" is one astral character; columns count characters. */
        const char *text = "{\"caf\\u00e9\": 1, \"\\ud83d\\ude00\": 2, \"é€\": 3, \"z\": 4}";

        at(text, (struct mx_jsonpos_step[]){ { "café", 0 } }, 1, true, 1, 2);
        at(text, (struct mx_jsonpos_step[]){ { "\xf0\x9f\x98\x80", 0 } }, 1, true, 1, 18);
        at(text, (struct mx_jsonpos_step[]){ { "é€", 0 } }, 1, true, 1, 37);
        at(text, (struct mx_jsonpos_step[]){ { "z", 0 } }, 1, true, 1, 46);
}

TEST(bom_and_errors)
{
        unsigned l, c;
        const char *bom = "\xef\xbb\xbf{\"a\": 1}";

        at(bom, (struct mx_jsonpos_step[]){ { "a", 0 } }, 1, true, 1, 2);
        ASSERT_ERR(
                mx_jsonpos_find("{\"a\": 1}", 8, (struct mx_jsonpos_step[]){ { "b", 0 } }, 1, false, &l, &c),
                ENOENT);
        ASSERT_ERR(mx_jsonpos_find("[1, 2]", 6, (struct mx_jsonpos_step[]){ { NULL, 2 } }, 1, false, &l, &c),
                   ENOENT);
        ASSERT_ERR(mx_jsonpos_find("[1, 2]", 6, (struct mx_jsonpos_step[]){ { "a", 0 } }, 1, false, &l, &c),
                   ENOENT);
        ASSERT_ERR(mx_jsonpos_find("{\"a\": [1, ", 10, (struct mx_jsonpos_step[]){ { "b", 0 } }, 1, false,
                                   &l, &c),
                   EBADMSG);
        ASSERT_ERR(mx_jsonpos_find("{\"a", 3, (struct mx_jsonpos_step[]){ { "a", 0 } }, 1, false, &l, &c),
                   EBADMSG);
}
