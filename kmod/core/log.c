// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * log.c - message formatting for the core.  Its own small vsnprintf keeps
 * verifier messages byte-identical in the kernel and in user space, so the
 * same test tables check them in both.
 */
#include "cad_core.h"

struct out {
	char *buf;
	size_t size;
	size_t len;   /* length of the full output, even past size */
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_padded(struct out *o, const char *s, size_t n, int width,
		       bool left, char pad)
{
	size_t i;

	if (!left)
		for (; width > 0 && (size_t)width > n; width--)
			put(o, pad);
	for (i = 0; i < n; i++)
		put(o, s[i]);
	if (left)
		for (; width > 0 && (size_t)width > n; width--)
			put(o, ' ');
}

static size_t to_digits(char *tmp, unsigned long long v, unsigned int base)
{
	static const char digits[] = "0123456789abcdef";
	size_t n = 0;

	do {
		tmp[n++] = digits[v % base];
		v /= base;
	} while (v);
	return n;
}

int cad_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { buf, buf ? size : 0, 0 };

	while (*fmt) {
		bool left = false, neg = false;
		char pad = ' ', tmp[24], num[25];
		int width = 0, lng = 0;
		unsigned long long v;
		size_t n, i;

		if (*fmt != '%') {
			put(&o, *fmt++);
			continue;
		}
		fmt++;
		for (;; fmt++) {
			if (*fmt == '-')
				left = true;
			else if (*fmt == '0')
				pad = '0';
			else
				break;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		while (*fmt == 'l') {
			lng++;
			fmt++;
		}
		switch (*fmt) {
		case '%':
			put(&o, '%');
			break;
		case 'c': {
			char c = (char)va_arg(ap, int);

			put_padded(&o, &c, 1, width, left, ' ');
			break;
		}
		case 's': {
			const char *s = va_arg(ap, const char *);

			if (!s)
				s = "(null)";
			for (n = 0; s[n]; n++)
				;
			put_padded(&o, s, n, width, left, ' ');
			break;
		}
		case 'd':
		case 'i': {
			long long sv = lng >= 2 ? va_arg(ap, long long)
				     : lng == 1 ? va_arg(ap, long) : va_arg(ap, int);

			neg = sv < 0;
			v = neg ? 0ull - (unsigned long long)sv : (unsigned long long)sv;
			goto number;
		}
		case 'u':
		case 'x':
			v = lng >= 2 ? va_arg(ap, unsigned long long)
			  : lng == 1 ? va_arg(ap, unsigned long) : va_arg(ap, unsigned int);
number:
			n = to_digits(tmp, v, *fmt == 'x' ? 16 : 10);
			i = 0;
			if (neg)
				num[i++] = '-';
			while (n)
				num[i++] = tmp[--n];
			if (neg && pad == '0' && !left) {
				put(&o, '-');
				put_padded(&o, num + 1, i - 1, width - 1, false, '0');
			} else {
				put_padded(&o, num, i, width, left, left ? ' ' : pad);
			}
			break;
		default:
			/* Not a conversion we know: print it as it stands. */
			put(&o, '%');
			if (!*fmt)
				goto end;
			put(&o, *fmt);
			break;
		}
		fmt++;
	}
end:
	if (o.size)
		o.buf[o.len < o.size ? o.len : o.size - 1] = '\0';
	return (int)o.len;
}

int cad_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = cad_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

void cad_log_init(struct cad_log *log, char *buf, __u32 size)
{
	log->buf = size ? buf : NULL;
	log->size = buf ? size : 0;
	log->len = 0;
	log->truncated = false;
	if (log->buf)
		log->buf[0] = '\0';
}

void cad_vlogf(struct cad_log *log, const char *fmt, va_list ap)
{
	__u32 room;
	int n;

	if (!log || !log->buf)
		return;
	room = log->size - log->len;
	n = cad_vsnprintf(log->buf + log->len, room, fmt, ap);
	if ((__u32)n >= room) {
		log->truncated = true;
		log->len = log->size - 1;
	} else {
		log->len += (__u32)n;
	}
}

void cad_logf(struct cad_log *log, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cad_vlogf(log, fmt, ap);
	va_end(ap);
}
