// SPDX-License-Identifier: GPL-2.0
/*
 * cad_ubsan.c - the undefined-behaviour sanitizer's handlers for the
 * tests' build of cad.ko (kmod/CMakeLists.txt: build/kmod/ubsan/cad.ko).
 *
 * Debian's kernel is built without CONFIG_UBSAN, so it has no handlers to
 * link against.  The tests' build compiles the module's own code and the
 * core with GCC's -fsanitize=bounds,shift,... (Kbuild, CAD_UBSAN=y) and
 * links these instead: each reports the first time a check fails at a
 * place, "UBSAN: <what> at <file>:<line>:<column>", with a WARN and its
 * stack trace, and lets the module go on (the kernel's own lib/ubsan.c
 * does the same).  The harness fails a run whose kernel log has "UBSAN"
 * or "WARNING:" in it (tests/kmod/vm.py).
 *
 * Every check's static data begins with the source location (GCC's
 * ubsan.c; the kernel's lib/ubsan.h describes the same layout), which is
 * all a report here needs; the values the check saw are printed where
 * they say what went wrong.  This file is compiled without the sanitizer.
 */
#include <linux/bug.h>
#include <linux/kernel.h>
#include <linux/stdarg.h>
#include <linux/uaccess.h>

struct cad_ubsan_loc {
	const char *file;
	u32 line;
	u32 column;  /* its top bit: reported once already */
};

struct cad_ubsan_type {
	u16 kind;
	u16 info;
	char name[];
};

/* data: location, type, log2 of the alignment the type needs, kind of
 * access; ptr: the address.
 */
struct cad_ubsan_mismatch {
	struct cad_ubsan_loc loc;
	const struct cad_ubsan_type *type;
	u8 log_alignment;
	u8 check_kind;
};

/* Whether loc is reported now (the first time). */
static notrace bool first_time(struct cad_ubsan_loc *loc)
{
	u32 old = READ_ONCE(loc->column);

	return !(old & 0x80000000u) && cmpxchg(&loc->column, old, old | 0x80000000u) == old;
}

/* fmt: what the check saw, after the place. */
static notrace __printf(3, 4) void report_one(void *data, const char *what, const char *fmt, ...)
{
	struct cad_ubsan_loc *loc = data;
	char detail[96];
	va_list ap;

	if (first_time(loc)) {
		va_start(ap, fmt);
		vsnprintf(detail, sizeof(detail), fmt, ap);
		va_end(ap);
		WARN(1, "UBSAN: %s at %s:%u:%u%s\n", what, loc->file, loc->line,
		     loc->column & 0x7fffffffu, detail);
	}
}

/* objtool lets code between user_access_begin() and _end() call a few
 * handlers (the shift and type-mismatch ones): those turn user access off
 * before anything else, as lib/ubsan.c's do (report_ua).  Nothing here
 * is traced.
 */
#define report_ua(...)                                          \
	do {                                                    \
		const unsigned long ua = user_access_save();    \
		report_one(__VA_ARGS__);                        \
		user_access_restore(ua);                        \
	} while (0)

/* Handlers GCC 12 calls for the checks the tests' build turns on.  Their
 * arguments after data are the values checked (passed as pointer-sized
 * words): declared so here, which the x86-64 calling convention makes
 * the same as GCC's own declarations.
 */
void __ubsan_handle_out_of_bounds(void *data, void *index);
notrace void __ubsan_handle_out_of_bounds(void *data, void *index)
{
	report_one(data, "array index out of bounds", " (index %ld)", (long)index);
}

void __ubsan_handle_shift_out_of_bounds(void *data, void *lhs, void *rhs);
notrace void __ubsan_handle_shift_out_of_bounds(void *data, void *lhs, void *rhs)
{
	report_ua(data, "shift out of bounds", " (%ld shifted by %ld)", (long)lhs, (long)rhs);
}

void __ubsan_handle_divrem_overflow(void *data, void *lhs, void *rhs);
notrace void __ubsan_handle_divrem_overflow(void *data, void *lhs, void *rhs)
{
	report_one(data, "division by zero or overflow", " (%ld / %ld)", (long)lhs, (long)rhs);
}

void __ubsan_handle_load_invalid_value(void *data, void *val);
notrace void __ubsan_handle_load_invalid_value(void *data, void *val)
{
	report_one(data, "load of a value invalid for its type (bool or enum)", " (%lu)",
		   (unsigned long)val);
}

void __ubsan_handle_vla_bound_not_positive(void *data, void *bound);
notrace void __ubsan_handle_vla_bound_not_positive(void *data, void *bound)
{
	report_one(data, "variable-length array bound not positive", " (%ld)", (long)bound);
}

void __ubsan_handle_type_mismatch_v1(void *data, void *ptr);
notrace void __ubsan_handle_type_mismatch_v1(void *data, void *ptr)
{
	const struct cad_ubsan_mismatch *m = data;
	const unsigned long align = 1ul << m->log_alignment;

	if (!ptr)
		report_ua(data, "null pointer access", "%s", "");
	else
		report_ua(data,
			  (unsigned long)ptr & (align - 1) ? "misaligned access" :
							     "access past an object",
			  " (%s at %px, %lu-byte aligned)", m->type ? m->type->name : "?", ptr,
			  align);
}

void __ubsan_handle_pointer_overflow(void *data, void *base, void *result);
notrace void __ubsan_handle_pointer_overflow(void *data, void *base, void *result)
{
	report_one(data, "pointer arithmetic overflowed", " (%px to %px)", base, result);
}

void __ubsan_handle_builtin_unreachable(void *data);
notrace void __ubsan_handle_builtin_unreachable(void *data)
{
	report_one(data, "__builtin_unreachable() reached", "%s", "");
	BUG();
}
