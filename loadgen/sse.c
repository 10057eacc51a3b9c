/* SPDX-License-Identifier: MIT */
/* Server-sent event splitting (see sse.h). */
#include "sse.h"

void mx_sse_init(struct mx_sse *s, size_t max_event)
{
        *s = (struct mx_sse){
                .max_event = max_event ? MX_MIN(max_event, (size_t)MX_SSE_EVENT_MAX) : MX_SSE_EVENT_DEFAULT,
        };
}

void mx_sse_done(struct mx_sse *s)
{
        mx_buf_free(&s->line);
        mx_buf_free(&s->data);
        mx_buf_free(&s->type);
}

/* A blank line: hand over the event, if it has data, and start the next. */
static int sse_dispatch(struct mx_sse *s, mx_sse_event_cb cb, void *userdata)
{
        struct mx_sse_event ev;
        int r = 0;

        if (s->has_data) {
                /* every data: line added a LF; the last one is not part of the data */
                if (s->data.len > 0)
                        s->data.data[--s->data.len] = '\0';
                ev = (struct mx_sse_event){
                        .type = s->type.len > 0 ? s->type.data : "message",
                        .data = s->data.data ?: "",
                        .data_len = s->data.len,
                };
                r = cb(&ev, userdata);
        }
        mx_buf_reset(&s->data);
        mx_buf_reset(&s->type);
        s->has_data = false;
        return r;
}

/* One complete line (without its terminator). */
static int sse_line(struct mx_sse *s, mx_sse_event_cb cb, void *userdata)
{
        const char *line = s->line.data ?: "", *colon, *value;
        size_t len = s->line.len, name_len, value_len;

        if (len == 0)
                return sse_dispatch(s, cb, userdata);
        if (line[0] == ':')
                return 0;
        colon = memchr(line, ':', len);
        name_len = colon ? (size_t)(colon - line) : len;
        value = colon ? colon + 1 : line + len;
        if (colon && value < line + len && *value == ' ')
                value++;
        value_len = (size_t)(line + len - value);

        if (name_len == 4 && memcmp(line, "data", 4) == 0) {
                if (s->data.len + value_len + 1 > s->max_event)
                        return -E2BIG;
                mx_buf_add(&s->data, value, value_len);
                mx_buf_putc(&s->data, '\n');
                s->has_data = true;
        } else if (name_len == 5 && memcmp(line, "event", 5) == 0) {
                mx_buf_reset(&s->type);
                mx_buf_add(&s->type, value, value_len);
        }
        return 0;
}

int mx_sse_feed(struct mx_sse *s, const void *p, size_t n, mx_sse_event_cb cb, void *userdata)
{
        static const unsigned char bom[3] = { 0xEF, 0xBB, 0xBF };
        const unsigned char *b = p;
        size_t i = 0;

        if (s->error < 0)
                return s->error;
        while (i < n) {
                size_t j = i;
                int r;

                /* a BOM at the very start of the stream, even split over pieces, is skipped */
                if (s->bom_matched < 3) {
                        if (b[i] == bom[s->bom_matched]) {
                                mx_buf_putc(&s->line, (char)b[i++]);
                                if (++s->bom_matched == 3)
                                        mx_buf_reset(&s->line);
                                continue;
                        }
                        s->bom_matched = 3;
                }
                if (s->cr_pending) {
                        s->cr_pending = false;
                        if (b[i] == '\n') {
                                i++;
                                continue;
                        }
                }
                while (j < n && b[j] != '\r' && b[j] != '\n')
                        j++;
                if (s->line.len + (j - i) > s->max_event)
                        return (s->error = -E2BIG);
                mx_buf_add(&s->line, b + i, j - i);
                if (j == n)
                        break;
                s->cr_pending = b[j] == '\r';
                i = j + 1;
                r = sse_line(s, cb, userdata);
                mx_buf_reset(&s->line);
                if (r < 0)
                        return (s->error = r);
        }
        return 0;
}

int mx_sse_finish(struct mx_sse *s)
{
        bool pending = s->has_data || s->line.len > 0;

        if (s->bom_matched < 3)
                pending = false; /* only (part of) a BOM */
        mx_buf_reset(&s->line);
        mx_buf_reset(&s->data);
        mx_buf_reset(&s->type);
        s->has_data = false;
        return pending ? 1 : 0;
}

bool mx_sse_is_done(const struct mx_sse_event *ev)
{
        return ev->data_len == 6 && memcmp(ev->data, "[DONE]", 6) == 0;
}
