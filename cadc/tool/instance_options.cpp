// instance_options.cpp - see instance_options.h.
#include "instance_options.h"

#include "../../kmod/core/cad_core.h"
#include "../lib/spec.h"

namespace cad::tool {

void add_instance_options(CLI::App *cmd, InstanceOptions *o, bool single) {
  cmd->add_option("--ranks", o->ranks, single ? "Number of ranks P" : "Numbers of ranks: a SPEC (1..8,16)")
      ->required(single);
  cmd->add_option(single ? "--size" : "--sizes", o->sizes,
                  single ? "Count per rank n, in elements" : "Counts per rank: a SPEC");
  cmd->add_option(single ? "--root" : "--roots", o->roots, single ? "Root rank" : "Roots: a SPEC, or all");
  cmd->add_option("--param", o->params, "Set a parameter: name=value" + std::string(single ? "" : " or name=SPEC"));
  cmd->add_option("--topology", o->topology, "Topology file (schemas/topology.schema.json)");
  cmd->add_option("--algorithm", o->algorithm, "Only this algorithm of the files");
  cmd->add_option("--dtype", o->dtype, "Datatype of the elements (i8..u64, f32, f64, ...)");
  cmd->add_option("--op", o->op, "Reduction op of the instance (sum, max, ..., or a user-defined operator of --ops)");
  cmd->add_option("--ops", o->op_files, "User-defined operators: C files (CAD_OP functions) or .cadop files");
  cmd->add_flag("--inplace", o->inplace, "MPI_IN_PLACE" + std::string(single ? "" : " (also checked when the algorithm declares it)"));
  if (single) cmd->add_flag("--noncommutative", o->noncommutative, "Treat the op as non-commutative");
}

std::vector<const Algorithm *> select(const Module &m, const std::string &name) {
  std::vector<const Algorithm *> out;
  for (const Algorithm &a : m.algorithms)
    if (name.empty() || a.name == name) out.push_back(&a);
  if (out.empty()) throw UsageError("no algorithm named '" + name + "'");
  return out;
}

bool load_instance_ops(Session &s, InstanceOptions *o) {
  const size_t before = s.diags.error_count();
  for (const std::string &f : o->op_files) {
    std::vector<UserOp> got;
    if (!load_ops(s, f, OpcOptions(), &got)) continue;
    for (UserOp &u : got) {
      for (const auto &v : o->ops)
        if (v->name == u.name) throw UsageError(f + ": a second operator named " + u.name + " (--ops)");
      o->ops.push_back(std::make_shared<const UserOp>(std::move(u)));
    }
  }
  return s.diags.error_count() == before;
}

namespace {
bool is_builtin_op(const std::string &name) {
  for (unsigned k = CAD_OP_SUM; k < CAD_OP_USER; k++)
    if (name == cad_op_name(k)) return true;
  return false;
}
}  // namespace

void parse_type_and_op(const std::string &dtype_name, const std::string &op_name_given, bool noncommutative,
                       std::shared_ptr<const UserOp> user, const std::string &user_ops_hint, bool check_op,
                       InstanceSpec *spec) {
  if (!user && !op_name_given.empty() && !is_builtin_op(op_name_given))
    throw UsageError("unknown --op '" + op_name_given +
                     "' (built-in: sum, prod, min, max, band, bor, bxor, land, lor, lxor, minloc, maxloc; " +
                     user_ops_hint + ")");
  if (user) {
    if (!dtype_name.empty())
      throw UsageError("--dtype does not apply to " + user->name + ": its element type is " + user->type);
    if (noncommutative)
      throw UsageError("--noncommutative does not apply to " + user->name + ": it declares whether it commutes");
    spec->dtype = CAD_DT_USER;
    spec->op = CAD_OP_USER;
    spec->user_op = user;
    spec->commutative = user->commutative;
    return;
  }
  const std::string dtype = dtype_name.empty() ? "i32" : dtype_name, op = op_name_given.empty() ? "sum" : op_name_given;
  bool found = false;
  for (unsigned d = CAD_DT_INT8; d < CAD_DT_USER; d++)
    if (dtype == cad_dtype_name(d)) {
      spec->dtype = d;
      found = true;
    }
  if (!found) throw UsageError("unknown --dtype '" + dtype + "' (i8 .. u64, f32, f64, f64_i32, ...)");
  for (unsigned k = CAD_OP_SUM; k < CAD_OP_USER; k++)
    if (op == cad_op_name(k)) spec->op = k;
  if (check_op && !cad_reduce_supported(spec->op, spec->dtype))
    throw UsageError("op " + op + " does not apply to datatype " + dtype);
}

void parse_op(const InstanceOptions &o, const Algorithm &a, InstanceSpec *spec) {
  std::shared_ptr<const UserOp> user;
  for (const auto &u : o.ops)
    if (u->name == o.op) user = u;
  const std::string fixed = written_for(a);
  if (o.op.empty() && collective_info(a.collective).reducing) user = a.user_op;
  // (An unknown name is parse_type_and_op's to report, first.)
  if (!fixed.empty() && !o.op.empty() && o.op != fixed && (user || is_builtin_op(o.op)))
    throw UsageError(a.name + " is written for the op " + fixed + ": give --op " + fixed + " or no --op");
  std::string user_ops;
  for (const auto &u : o.ops) user_ops += (user_ops.empty() ? "" : ", ") + u->name;
  const std::string op = o.op.empty() && !a.user_op ? fixed : o.op;
  parse_type_and_op(o.dtype.empty() && !op.empty() && !user ? cad_dtype_name(default_dtype(builtin_op(op))) : o.dtype, op, o.noncommutative, user,
                    user_ops.empty() ? std::string("a user-defined one needs --ops FILE") : "of --ops: " + user_ops,
                    true, spec);
}

Machine load_topology_option(const std::string &path) {
  Machine m;
  if (path.empty()) return m;
  std::string error;
  if (!load_machine(path, &m, &error)) throw UsageError(error);
  return m;
}

namespace {
int64_t one(const std::string &text, const char *what, int64_t dflt) {
  if (text.empty()) return dflt;
  std::vector<int64_t> v;
  std::string error;
  if (!parse_spec(text, &v, &error) || v.size() != 1)
    throw UsageError(std::string(what) + " takes one number, not '" + text + "'");
  return v[0];
}
}  // namespace

InstanceSpec single_instance(const InstanceOptions &o, const Algorithm &a) {
  InstanceSpec spec;
  spec.P = one(o.ranks, "--ranks", 1);
  if (spec.P < 1 || spec.P > kMaxRanks)
    throw UsageError("--ranks must be 1.." + std::to_string(kMaxRanks) + ", not " + std::to_string(spec.P));
  spec.n = one(o.sizes, "--size", 0);
  spec.root = one(o.roots, "--root", 0);
  if (spec.root >= spec.P) throw UsageError("--root " + std::to_string(spec.root) + " is not below --ranks " + std::to_string(spec.P));
  spec.inplace = o.inplace;
  spec.commutative = !o.noncommutative;
  parse_op(o, a, &spec);
  for (const std::string &p : o.params) {
    std::string name, error;
    std::vector<int64_t> values;
    if (!parse_setting(p, &name, &values, &error)) throw UsageError("--param " + error);
    if (values.size() != 1) throw UsageError("--param " + name + " takes one value here");
    spec.params.emplace_back(name, values[0]);
  }
  std::string error;
  std::shared_ptr<const Topology> topo;
  if (!Topology::make(load_topology_option(o.topology), spec.P, &topo, &error)) throw UsageError(error);
  spec.topo = topo;
  return spec;
}

bool load_single_instance(Session &s, const std::string &file, InstanceOptions *o, SingleInstance *out) {
  if (!load_instance_ops(s, o) || !load_module(s, file, &out->m, true, o->ops)) return false;
  auto algs = select(out->m, o->algorithm);
  if (algs.size() > 1) throw UsageError(file + " defines several algorithms: choose one with --algorithm");
  out->alg = algs[0];
  out->spec = single_instance(*o, *out->alg);
  out->in = std::make_unique<Instantiator>(*out->alg, out->spec, &s.diags);
  const Instantiator &in = *out->in;
  if (in.ok() && !in.applicable()) {
    Diagnostic &d = s.diags.error(Code::NeverHolds, in.failed_requirement()->cond->loc,
                                  "this requirement does not hold for the instance");
    d.instance = out->spec.describe(*out->alg);
  }
  return in.ok() && in.applicable();
}

std::string op_text(const RankProgram &p, const RankOp &o) {
  auto range = [&](int32_t b, uint64_t off) {
    return p.buffers[b].name + "[" + std::to_string(off / p.esize) + ":" + std::to_string((off + o.len) / p.esize) + "]";
  };
  switch (o.kind) {
    case CAD_NODE_SEND: return "send " + range(o.src, o.src_off) + " → " + std::to_string(o.peer);
    case CAD_NODE_RECV: return "recv " + range(o.dst, o.dst_off) + " ← " + std::to_string(o.peer);
    case CAD_NODE_COPY: return "copy " + range(o.dst, o.dst_off) + " ← " + range(o.src, o.src_off);
    case CAD_NODE_REDUCE: return std::string("reduce ") + cad_op_name(o.op) + " " + range(o.dst, o.dst_off) + " ← " + range(o.src, o.src_off);
    default: return "fence";
  }
}

}  // namespace cad::tool
