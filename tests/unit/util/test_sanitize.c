/* util/sanitize: the one sanitiser for outside strings. Control bytes,
 * ESC, newlines, C1 controls, bidirectional overrides and every malformed
 * UTF-8 sequence become '?'; valid text passes untouched; the output fits
 * the buffer and is cut at a character boundary; a cJSON tree comes out
 * valid. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/sanitize.h"

static const char *san(const char *in)
{
    static char out[256];
    pf_sanitize(out, sizeof(out), in);
    return out;
}

Test(sanitize, plain_and_unicode_text_pass_untouched)
{
    cr_assert_str_eq(san("ip-10-0-0-7.ec2.internal"), "ip-10-0-0-7.ec2.internal");
    cr_assert_str_eq(san("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
                     "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    cr_assert(pf_is_clean("node-1"));
    cr_assert_str_eq(san(""), "");
}

Test(sanitize, control_bytes_and_escape_sequences_are_replaced)
{
    /* A forged "FAKE: pass" line and a screen clear. */
    cr_assert_str_eq(san("evil\x1b[2J\nFAKE: pass\r"), "evil?[2J?FAKE: pass?");
    cr_assert_str_eq(san("a\tb"), "a b");
    cr_assert_str_eq(san("del\x7f bell\x07"), "del? bell?");
    /* C1 controls (CSI as U+009B) are controls too. */
    cr_assert_str_eq(san("x\xc2\x9b" "31m"), "x?31m");
    /* Bidirectional override and isolates, line separator. */
    cr_assert_str_eq(san("a\xe2\x80\xae" "b\xe2\x81\xa6" "c\xe2\x80\xa8"),
                     "a?b?c?");
    cr_assert_not(pf_is_clean("x\x1b"));
}

Test(sanitize, invalid_utf8_is_replaced_byte_by_byte)
{
    cr_assert_str_eq(san("\xff\xfe"), "??");
    cr_assert_str_eq(san("overlong \xc0\xaf"), "overlong ??");
    cr_assert_str_eq(san("surrogate \xed\xa0\x80"), "surrogate ???");
    cr_assert_str_eq(san("beyond \xf4\x90\x80\x80"), "beyond ????");
    cr_assert_str_eq(san("cut \xe2\x82"), "cut ??");
    cr_assert_str_eq(san("lone \x80 cont"), "lone ? cont");
    cr_assert_not(pf_is_clean("\xc3"));
}

Test(sanitize, output_is_bounded_and_cut_at_a_character)
{
    char out[6];

    cr_assert_eq(pf_sanitize(out, sizeof(out), "abcdefgh"), 5);
    cr_assert_str_eq(out, "abcde");
    /* A 3-byte euro after "abc" does not fit whole in 5 bytes: cut before it. */
    cr_assert_eq(pf_sanitize(out, 6, "abc\xe2\x82\xac"), 3);
    cr_assert_str_eq(out, "abc");
    cr_assert_eq(pf_sanitize(out, 1, "abc"), 0);
    cr_assert_str_eq(out, "");
}

Test(sanitize, works_in_place_and_keeps_newlines_when_asked)
{
    char buf[64];

    snprintf(buf, sizeof(buf), "a\x1b\xff\nb");
    pf_sanitize_inplace(buf, sizeof(buf));
    cr_assert_str_eq(buf, "a???b");
    snprintf(buf, sizeof(buf), "line 1\nline\x1b 2\n");
    pf_sanitize_text(buf, sizeof(buf), buf);
    cr_assert_str_eq(buf, "line 1\nline? 2\n");
}

Test(sanitize, json_tree_comes_out_valid)
{
    cJSON *root = cJSON_CreateObject(), *arr;
    char *text;

    cJSON_AddStringToObject(root, "host", "evil\x1b]0;x\x07\xff");
    arr = cJSON_AddArrayToObject(root, "list");
    cJSON_AddItemToArray(arr, cJSON_CreateString("ok"));
    cJSON_AddItemToArray(arr, cJSON_CreateString("\xc0\xaf\n"));
    pf_sanitize_json(root);
    text = cJSON_PrintUnformatted(root);
    cr_assert_str_eq(text, "{\"host\":\"evil?]0;x??\",\"list\":[\"ok\",\"???\"]}");
    free(text);
    cJSON_Delete(root);
}
