// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * tables.c - names, sizes and VM instruction formats, each table expanded
 * from the one X-macro list of the ABI header.
 */
#include "cad_core.h"

static const char *lookup(const char *const *names, unsigned int n, unsigned int v)
{
	return v < n && names[v] ? names[v] : "?";
}

#define CAD_NAME_FN(fn, list)                                    \
	const char *fn(unsigned int v)                                  \
	{                                                               \
		static const char *const names[] = { list(NAME3) };     \
		return lookup(names, CAD_ARRAY_SIZE(names), v);         \
	}

/* Lists whose entries are (NAME, value, "name"). */
#define NAME3(name, value, str) [value] = str,
CAD_NAME_FN(cad_node_kind_name, CAD_NODE_KINDS)
CAD_NAME_FN(cad_op_name, CAD_OPS)
CAD_NAME_FN(cad_collective_name, CAD_COLLECTIVES)
CAD_NAME_FN(cad_buffer_kind_name, CAD_BUFFER_KINDS)
CAD_NAME_FN(cad_section_name, CAD_SECTIONS)
#undef NAME3

const char *cad_dtype_name(unsigned int v)
{
#define DT_NAME(name, value, size, str) [value] = str,
	static const char *const names[] = { CAD_DATATYPES(DT_NAME) };
#undef DT_NAME
	return lookup(names, CAD_ARRAY_SIZE(names), v);
}

CAD_HOT __u32 cad_dtype_size(unsigned int v)
{
#define DT_SIZE(name, value, size, str) [value] = size,
	static const __u8 sizes[] = { CAD_DATATYPES(DT_SIZE) };
#undef DT_SIZE
	return v < CAD_ARRAY_SIZE(sizes) ? sizes[v] : 0;
}

struct vm_opinfo {
	const char *name;
	__u8 format;
	__u8 width;
};

static const struct vm_opinfo vm_ops[256] = {
#define VM_INFO(name, value, fmt, width, str) \
	[value] = { str, CAD_VMF_##fmt, width },
	CAD_VM_OPCODES(VM_INFO)
#undef VM_INFO
};

const char *cad_vm_opcode_name(unsigned int code)
{
	return code < 256 && vm_ops[code].name ? vm_ops[code].name : "?";
}

enum cad_vm_format cad_vm_opcode_format(unsigned int code)
{
	return code < 256 ? (enum cad_vm_format)vm_ops[code].format : CAD_VMF_INVALID;
}

unsigned int cad_vm_opcode_width(unsigned int code)
{
	return code < 256 ? vm_ops[code].width : 0;
}
