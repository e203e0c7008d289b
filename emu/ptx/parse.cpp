// The PTX parser: what nvcc emits (.version/.target/.address_size, .entry/.func with their
// parameters, .reg/.shared/.global/.local/.const declarations, labels, predicates, vector and
// address operands, .loc/.file) into Module. Instructions are decoded here, once: the
// interpreter does no string work per executed instruction. An instruction it cannot decode is
// kept as Op::Unsupported with its text, so that the kernel that holds it is refused by name.
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

#include "emu/ptx/module.h"
#include "emu/runtime/ptx.h"

namespace wsemu::ptxe {

int tyBits(Ty t) {
  switch (t) {
    case Ty::B8:
    case Ty::U8:
    case Ty::S8:
      return 8;
    case Ty::B16:
    case Ty::U16:
    case Ty::S16:
    case Ty::F16:
    case Ty::BF16:
      return 16;
    case Ty::B32:
    case Ty::U32:
    case Ty::S32:
    case Ty::F32:
    case Ty::F16x2:
    case Ty::BF16x2:
      return 32;
    case Ty::B64:
    case Ty::U64:
    case Ty::S64:
    case Ty::F64:
      return 64;
    case Ty::Pred:
      return 1;
    default:
      return 0;
  }
}
bool tySigned(Ty t) { return t == Ty::S8 || t == Ty::S16 || t == Ty::S32 || t == Ty::S64; }
bool tyFloat(Ty t) {
  return t == Ty::F16 || t == Ty::F32 || t == Ty::F64 || t == Ty::BF16 || t == Ty::F16x2 ||
         t == Ty::BF16x2;
}

std::string Module::where(uint32_t loc) const {
  const Loc &l = locs[loc];
  const char *f = l.file, *s = std::strrchr(f, '/');
  return std::string(s ? s + 1 : f) + ":" + std::to_string(l.line);
}

namespace {

Ty tyOf(const std::string &q) {
  static const std::map<std::string, Ty> m = {
      {"b8", Ty::B8},   {"b16", Ty::B16},     {"b32", Ty::B32},   {"b64", Ty::B64},
      {"u8", Ty::U8},   {"u16", Ty::U16},     {"u32", Ty::U32},   {"u64", Ty::U64},
      {"s8", Ty::S8},   {"s16", Ty::S16},     {"s32", Ty::S32},   {"s64", Ty::S64},
      {"f16", Ty::F16}, {"f16x2", Ty::F16x2}, {"bf16", Ty::BF16}, {"bf16x2", Ty::BF16x2},
      {"f32", Ty::F32}, {"f64", Ty::F64},     {"pred", Ty::Pred}};
  auto it = m.find(q);
  return it == m.end() ? Ty::None : it->second;
}

Space spaceOf(const std::string &q, bool *ok) {
  *ok = true;
  if (q == "global") return Space::Global;
  if (q == "shared" || q == "shared::cta") return Space::Shared;
  if (q == "shared::cluster") return Space::SharedCluster;
  if (q == "param") return Space::Param;
  if (q == "local") return Space::Local;
  if (q == "const") return Space::Const;
  *ok = false;
  return Space::Generic;
}

std::string trim(const std::string &s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace((unsigned char)s[a])) ++a;
  while (b > a && std::isspace((unsigned char)s[b - 1])) --b;
  return s.substr(a, b - a);
}

// Splits at top-level commas (not inside {} or []).
std::vector<std::string> splitOperands(const std::string &s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '{' || c == '[' || c == '(') ++depth;
    if (c == '}' || c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

std::vector<std::string> splitDots(const std::string &s) {
  std::vector<std::string> out;
  size_t at = 0;
  for (;;) {
    size_t d = s.find('.', at);
    out.push_back(s.substr(at, d == std::string::npos ? std::string::npos : d - at));
    if (d == std::string::npos) break;
    at = d + 1;
  }
  return out;
}

bool parseInt(const std::string &t, int64_t *v) {
  std::string s = t;
  if (s.empty()) return false;
  bool neg = false;
  if (s[0] == '-') {
    neg = true;
    s = s.substr(1);
  }
  if (!s.empty() && (s.back() == 'U' || s.back() == 'u')) s.pop_back();
  if (s.empty() || !std::isdigit((unsigned char)s[0])) return false;
  uint64_t u = 0;
  char *end = nullptr;
  if (s.size() > 2 && (s[1] == 'x' || s[1] == 'X'))
    u = std::strtoull(s.c_str() + 2, &end, 16);
  else if (s.size() > 2 && (s[1] == 'b' || s[1] == 'B'))
    u = std::strtoull(s.c_str() + 2, &end, 2);
  else if (s.size() > 1 && s[0] == '0')
    u = std::strtoull(s.c_str() + 1, &end, 8);
  else
    u = std::strtoull(s.c_str(), &end, 10);
  if (!end || *end) return false;
  *v = neg ? -(int64_t)u : (int64_t)u;
  return true;
}

const std::map<std::string, Special> &specials() {
  static const std::map<std::string, Special> m = {
      {"%tid.x", Special::TidX},
      {"%tid.y", Special::TidY},
      {"%tid.z", Special::TidZ},
      {"%ntid.x", Special::NtidX},
      {"%ntid.y", Special::NtidY},
      {"%ntid.z", Special::NtidZ},
      {"%ctaid.x", Special::CtaidX},
      {"%ctaid.y", Special::CtaidY},
      {"%ctaid.z", Special::CtaidZ},
      {"%nctaid.x", Special::NctaidX},
      {"%nctaid.y", Special::NctaidY},
      {"%nctaid.z", Special::NctaidZ},
      {"%laneid", Special::Laneid},
      {"%warpid", Special::Warpid},
      {"%nwarpid", Special::Nwarpid},
      {"%smid", Special::Smid},
      {"%nsmid", Special::Nsmid},
      {"%globaltimer", Special::GlobalTimer},
      {"%clock", Special::Clock},
      {"%clock64", Special::Clock64},
      {"%dynamic_smem_size", Special::DynSmem},
      {"%total_smem_size", Special::TotalSmem},
      {"%lanemask_eq", Special::LanemaskEq},
      {"%lanemask_lt", Special::LanemaskLt},
      {"%lanemask_le", Special::LanemaskLe},
      {"%lanemask_gt", Special::LanemaskGt},
      {"%lanemask_ge", Special::LanemaskGe},
      {"%cluster_ctarank", Special::ClusterCtarank},
      {"%cluster_nctarank", Special::ClusterNctarank},
      {"%cluster_ctaid.x", Special::ClusterCtaidX},
      {"%cluster_ctaid.y", Special::ClusterCtaidY},
      {"%cluster_ctaid.z", Special::ClusterCtaidZ},
      {"%cluster_nctaid.x", Special::ClusterNctaidX},
      {"%cluster_nctaid.y", Special::ClusterNctaidY},
      {"%cluster_nctaid.z", Special::ClusterNctaidZ},
      {"%clusterid.x", Special::ClusteridX},
      {"%clusterid.y", Special::ClusteridY},
      {"%clusterid.z", Special::ClusteridZ},
      {"%nclusterid.x", Special::NclusteridX},
      {"%nclusterid.y", Special::NclusteridY},
      {"%nclusterid.z", Special::NclusteridZ},
      {"%is_explicit_cluster", Special::IsExplicitCluster}};
  return m;
}

struct Parser {
  Module &m;
  std::string err;
  int line_no = 0;

  // ---- function state ----
  Function *fn = nullptr;
  std::vector<std::unordered_map<std::string, uint32_t>> reg_scopes;
  std::vector<std::unordered_map<std::string, uint32_t>> label_scopes;  // name -> code index
  std::vector<int> scope_ids;
  int next_scope = 0;
  struct PendingBranch {
    uint32_t ins;
    std::string label;
    std::vector<int> scopes;  // the scope chain at the branch, innermost last
  };
  std::vector<PendingBranch> branches;
  std::map<std::pair<int, std::string>, uint32_t> labels;  // (scope id, name) -> code index
  std::unordered_map<std::string, uint32_t> fn_syms;
  std::unordered_map<std::string, uint32_t> mod_syms;
  uint32_t cur_loc = 0;
  std::map<std::tuple<int, int, int>, int> loc_at;  // (file, line, col) -> latest loc index
  std::set<uint32_t> pred_regs;  // the function's .pred registers (cp.async's ignore-src operand)

  explicit Parser(Module &mod) : m(mod) {
    m.locs.push_back(Loc{});  // loc 0: unknown
  }

  bool fail(const std::string &what) {
    if (err.empty()) err = "PTX line " + std::to_string(line_no) + ": " + what;
    return false;
  }

  // ---- declarations ----
  // `.reg .b32 %r<132>` / `.reg .pred p` / `.reg .b64 %rd1, %rd2`
  bool declRegs(const std::string &rest) {
    std::istringstream in(rest);
    std::string ty;
    in >> ty;
    std::string names;
    std::getline(in, names);
    const uint32_t first = fn->nregs;
    for (auto &n : splitOperands(names)) {
      size_t lt = n.find('<');
      if (lt != std::string::npos) {
        std::string base = n.substr(0, lt);
        int count = std::atoi(n.c_str() + lt + 1);
        for (int i = 0; i < count; ++i) reg_scopes.back()[base + std::to_string(i)] = fn->nregs++;
      } else {
        reg_scopes.back()[n] = fn->nregs++;
      }
    }
    if (ty == ".pred")
      for (uint32_t r = first; r < fn->nregs; ++r) pred_regs.insert(r);
    return true;
  }

  // `.shared .align 16 .b8 name[123] = {...}` and friends; returns the var id.
  bool body_param = false;  // declVar of a `.param` in a function's body (a call's)
  bool declVar(const std::string &text, Space sp, bool in_fn, uint32_t *id_out = nullptr) {
    Var v;
    v.space = sp;
    std::string s = text, init;
    if (size_t eq = s.find('='); eq != std::string::npos) {
      init = trim(s.substr(eq + 1));
      s = trim(s.substr(0, eq));
    }
    std::istringstream in(s);
    std::string tok, last;
    Ty ty = Ty::B8;
    std::vector<std::string> toks;
    while (in >> tok) toks.push_back(tok);
    for (size_t i = 0; i < toks.size(); ++i) {
      const std::string &t = toks[i];
      if (t == ".align" && i + 1 < toks.size()) {
        v.align = (uint32_t)std::atoi(toks[++i].c_str());
      } else if (t[0] == '.') {
        Ty x = tyOf(t.substr(1));
        if (x != Ty::None) ty = x;
      } else {
        last = t;
        for (size_t j = i + 1; j < toks.size(); ++j) last += toks[j];
        break;
      }
    }
    if (last.empty()) return fail("a declaration without a name");
    v.elem = (uint32_t)std::max(1, tyBits(ty) / 8);
    uint64_t count = 1;
    size_t br = last.find('[');
    v.name = last.substr(0, br);
    while (br != std::string::npos) {
      size_t close = last.find(']', br);
      std::string n = last.substr(br + 1, close - br - 1);
      if (n.empty()) {
        v.dynamic = true;
        count = 0;
      } else {
        int64_t k;
        if (!parseInt(trim(n), &k)) return fail("an array size that is not a number: " + n);
        count *= (uint64_t)k;
      }
      br = last.find('[', close);
    }
    v.bytes = (uint32_t)(count * v.elem);
    if (v.align < v.elem) v.align = v.elem;
    if (!init.empty()) {
      std::string body = init;
      if (body.front() == '{') body = body.substr(1, body.size() - 2);
      for (auto &e : splitOperands(body)) {
        int64_t k;
        uint64_t bits;
        if (e.rfind("0f", 0) == 0 || e.rfind("0F", 0) == 0)
          bits = std::strtoull(e.c_str() + 2, nullptr, 16);
        else if (e.rfind("0d", 0) == 0 || e.rfind("0D", 0) == 0)
          bits = std::strtoull(e.c_str() + 2, nullptr, 16);
        else if (parseInt(e, &k))
          bits = (uint64_t)k;
        else
          return fail("an initializer the emulator does not read: " + e);
        for (uint32_t b = 0; b < v.elem; ++b) v.init.push_back((uint8_t)(bits >> (8 * b)));
      }
      v.init.resize(v.bytes, 0);
    }
    if (sp == Space::Param && in_fn && body_param) {
      v.call_param = true;
      if (v.bytes == 0) v.bytes = v.elem;
      v.param_offset = (fn->call_param_bytes + v.align - 1) / v.align * v.align;
      fn->call_param_bytes = v.param_offset + v.bytes;
    }
    if (sp == Space::Local && in_fn) {
      v.local_offset = (fn->local_bytes + v.align - 1) / v.align * v.align;
      fn->local_bytes = v.local_offset + v.bytes;
    }
    uint32_t id = (uint32_t)m.vars.size();
    m.vars.push_back(v);
    (in_fn ? fn_syms : mod_syms)[v.name] = id;
    if (id_out) *id_out = id;
    return true;
  }

  // ---- operands ----
  bool reg(const std::string &name, uint32_t *r) {
    for (auto it = reg_scopes.rbegin(); it != reg_scopes.rend(); ++it)
      if (auto f = it->find(name); f != it->end()) {
        *r = f->second;
        return true;
      }
    return false;
  }
  bool sym(const std::string &name, uint32_t *s) {
    if (auto f = fn_syms.find(name); f != fn_syms.end())
      *s = f->second;
    else if (auto g = mod_syms.find(name); g != mod_syms.end())
      *s = g->second;
    else
      return false;
    if (std::find(fn->syms.begin(), fn->syms.end(), *s) == fn->syms.end()) fn->syms.push_back(*s);
    return true;
  }

  bool operand(const std::string &t0, Operand *o) {
    std::string t = trim(t0);
    if (t.empty()) return fail("an empty operand");
    if (t == "_") {
      o->k = Operand::Sink;
      return true;
    }
    if (t[0] == '{') {  // vector
      std::string body = t.substr(1, t.rfind('}') - 1);
      auto parts = splitOperands(body);
      o->k = Operand::Vec;
      o->reg = (uint32_t)fn->vec.size();
      o->imm = (int64_t)parts.size();
      std::vector<Operand> elems;
      for (auto &p : parts) {
        Operand e;
        if (!operand(p, &e)) return false;
        elems.push_back(e);
      }
      for (auto &e : elems) fn->vec.push_back(e);
      return true;
    }
    if (t[0] == '[') {  // address
      std::string body = trim(t.substr(1, t.rfind(']') - 1));
      o->k = Operand::Addr;
      std::string base = body;
      int64_t off = 0;
      size_t plus = body.find('+', 1);
      if (plus != std::string::npos) {
        base = trim(body.substr(0, plus));
        if (!parseInt(trim(body.substr(plus + 1)), &off))
          return fail("an address offset that is not a number: " + body);
      } else if (size_t minus = body.find('-', 1); minus != std::string::npos) {
        base = trim(body.substr(0, minus));
        if (!parseInt(trim(body.substr(minus + 1)), &off))
          return fail("an address offset that is not a number: " + body);
        off = -off;
      }
      o->imm = off;
      int64_t abs;
      if (parseInt(base, &abs)) {
        o->imm += abs;
        return true;
      }
      if (reg(base, &o->reg)) return true;
      if (sym(base, &o->sym)) return true;
      return fail("an address of an unknown name: " + base);
    }
    if (size_t bar = t.find('|'); bar != std::string::npos) {
      o->k = Operand::Reg;
      const std::string first = trim(t.substr(0, bar));
      if (first == "_") o->reg = kNone;  // the sink: only the predicate is wanted
      if ((first != "_" && !reg(first, &o->reg)) || !reg(trim(t.substr(bar + 1)), &o->reg2))
        return fail("an unknown register in " + t);
      return true;
    }
    if (t[0] == '%') {
      if (reg(t, &o->reg)) {
        o->k = Operand::Reg;
        return true;
      }
      auto it = specials().find(t);
      if (it != specials().end()) {
        o->k = Operand::Special;
        o->special = (uint8_t)it->second;
        return true;
      }
      return fail("an unknown register " + t);
    }
    if ((t.rfind("0f", 0) == 0 || t.rfind("0F", 0) == 0) && t.size() == 10) {
      o->k = Operand::Imm;
      o->imm = (int64_t)std::strtoull(t.c_str() + 2, nullptr, 16);
      return true;
    }
    if ((t.rfind("0d", 0) == 0 || t.rfind("0D", 0) == 0) && t.size() == 18) {
      o->k = Operand::Imm;
      o->imm = (int64_t)std::strtoull(t.c_str() + 2, nullptr, 16);
      return true;
    }
    int64_t v;
    if (parseInt(t, &v)) {
      o->k = Operand::Imm;
      o->imm = v;
      return true;
    }
    if (reg(t, &o->reg)) {  // a scoped register of an inline-asm block (`p`, `q`)
      o->k = Operand::Reg;
      return true;
    }
    if (sym(t, &o->sym)) {
      o->k = Operand::Sym;
      return true;
    }
    // `sym+off` as a mov source
    if (size_t plus = t.find('+'); plus != std::string::npos) {
      int64_t off;
      if (sym(trim(t.substr(0, plus)), &o->sym) && parseInt(trim(t.substr(plus + 1)), &off)) {
        o->k = Operand::Sym;
        o->imm = off;
        return true;
      }
    }
    return fail("an operand the emulator does not read: " + t);
  }

  // ---- instructions ----
  bool instruction(const std::string &stmt) {
    Ins ins;
    ins.loc = cur_loc;
    std::string s = trim(stmt);
    if (s[0] == '@') {
      size_t sp = s.find_first_of(" \t");
      std::string g = s.substr(1, sp - 1);
      if (g[0] == '!') {
        ins.guard_neg = true;
        g = g.substr(1);
      }
      if (!reg(g, &ins.guard)) return fail("an unknown guard predicate " + g);
      s = trim(s.substr(sp));
    }
    size_t sp = s.find_first_of(" \t");
    std::string opcode = s.substr(0, sp);
    std::string rest = sp == std::string::npos ? "" : trim(s.substr(sp));
    auto quals = splitDots(opcode);
    std::string base = quals[0];
    quals.erase(quals.begin());
    std::vector<std::string> ops = splitOperands(rest);
    // call{.uni} (ret), name, (args): a .func of this module, or vprintf (device printf).
    // Indirect calls (a register and a prototype) are not decoded.
    if (base == "call") {
      for (auto &q : quals)
        if (q != "uni") return unsupported(ins, opcode, stmt);
      std::vector<std::string> rets, args;
      std::string callee;
      size_t k = 0;
      auto list = [](const std::string &t) { return splitOperands(t.substr(1, t.rfind(')') - 1)); };
      if (k < ops.size() && !ops[k].empty() && ops[k][0] == '(') rets = list(ops[k++]);
      if (k < ops.size()) callee = ops[k++];
      if (k < ops.size() && !ops[k].empty() && ops[k][0] == '(') args = list(ops[k++]);
      if (callee.empty() || k != ops.size()) return unsupported(ins, opcode, stmt);
      auto syms = [&](const std::vector<std::string> &names, Operand *o) {
        o->k = Operand::Vec;
        o->reg = (uint32_t)fn->vec.size();
        o->imm = (int64_t)names.size();
        for (auto &n : names) {
          Operand e;
          e.k = Operand::Sym;
          if (!sym(trim(n), &e.sym)) return false;
          fn->vec.push_back(e);
        }
        return true;
      };
      if (!syms(rets, &ins.o[0]) || !syms(args, &ins.o[1])) return unsupported(ins, opcode, stmt);
      ins.nops = 2;
      if (callee == "vprintf" && args.size() == 2 && rets.size() <= 1) {
        ins.op = Op::Vprintf;
        return push(ins, stmt);
      }
      // A failed device assert(): message, file, line, function, char size.
      if (callee == "__assertfail" && args.size() == 5 && rets.empty()) {
        ins.op = Op::AssertFail;
        return push(ins, stmt);
      }
      auto it = m.func_by_name.find(callee);
      if (it == m.func_by_name.end() || m.funcs[it->second].entry ||
          m.funcs[it->second].nrets != rets.size() ||
          m.funcs[it->second].params.size() != rets.size() + args.size())
        return unsupported(ins, opcode + " " + callee, stmt);
      ins.op = Op::Call;
      ins.target = it->second;
      return push(ins, stmt);
    }
    // Branch targets are labels: resolved at the function's end.
    if (base == "bra" || base == "brx") {
      for (auto &q : quals)
        if (q != "uni") return unsupported(ins, opcode, stmt);
      if (base == "brx" || ops.size() != 1) return unsupported(ins, opcode, stmt);
      ins.op = Op::Bra;
      branches.push_back({(uint32_t)fn->code.size(), ops[0], scope_ids});
      return push(ins, stmt);
    }
    // Operands: an address holding a TMA's coordinates, `[map, {c0, c1}]`, is two operands.
    std::vector<std::string> flat;
    for (auto &o : ops) {
      if (o.size() > 1 && o[0] == '[') {
        auto inner = splitOperands(o.substr(1, o.rfind(']') - 1));
        if (inner.size() == 2) {
          flat.push_back("[" + inner[0] + "]");
          flat.push_back(inner[1]);
          continue;
        }
      }
      flat.push_back(o);
    }
    // createpolicy's fraction may be a decimal literal (`1.0`), which the operand reader does not
    // take: the policy the emulator returns is one value whatever the fraction, so it is dropped.
    if (base == "createpolicy" && flat.size() == 2 && flat[1].find('.') != std::string::npos) {
      char *end = nullptr;
      const double f = std::strtod(flat[1].c_str(), &end);
      if (end && *end == '\0' && f > 0 && f <= 1) flat.pop_back();
    }
    if (flat.size() > 8) return unsupported(ins, opcode, stmt);
    for (size_t i = 0; i < flat.size(); ++i)
      if (!operand(flat[i], &ins.o[i])) {
        // an operand it cannot read: the instruction is refused by name, the parse goes on
        err.clear();
        return unsupported(ins, opcode, stmt);
      }
    ins.nops = (uint8_t)flat.size();
    if (!decode(base, quals, ins)) return unsupported(ins, opcode, stmt);
    return push(ins, stmt);
  }

  bool push(Ins &ins, const std::string &stmt) {
    fn->code.push_back(ins);
    fn->text.push_back(trim(stmt));
    return true;
  }
  bool unsupported(Ins &ins, const std::string &opcode, const std::string &stmt) {
    ins.op = Op::Unsupported;
    if (fn->unsupported == kNone) {
      fn->unsupported = (uint32_t)fn->code.size();
      fn->unsupported_why = opcode;
    }
    return push(ins, stmt);
  }

  // The decoder: one opcode's qualifiers into Ins. False: not implemented.
  bool decode(const std::string &base, const std::vector<std::string> &quals, Ins &ins);
};

enum Cmp : uint8_t {
  EQ = 1,
  NE,
  LT,
  LE,
  GT,
  GE,
  LO,
  LS,
  HI,
  HS,
  EQU,
  NEU,
  LTU,
  LEU,
  GTU,
  GEU,
  NUM,
  NAN_
};

uint8_t cmpOf(const std::string &q) {
  static const std::map<std::string, uint8_t> m = {
      {"eq", EQ},   {"ne", NE},   {"lt", LT},   {"le", LE},   {"gt", GT},   {"ge", GE},
      {"lo", LO},   {"ls", LS},   {"hi", HI},   {"hs", HS},   {"equ", EQU}, {"neu", NEU},
      {"ltu", LTU}, {"leu", LEU}, {"gtu", GTU}, {"geu", GEU}, {"num", NUM}, {"nan", NAN_}};
  auto it = m.find(q);
  return it == m.end() ? 0 : it->second;
}

bool Parser::decode(const std::string &base, const std::vector<std::string> &quals, Ins &ins) {
  // Qualifiers every opcode may carry and that change nothing here, and the type(s).
  std::vector<Ty> types;
  std::vector<std::string> q;  // what is left to interpret
  for (auto &x : quals) {
    Ty t = tyOf(x);
    if (t != Ty::None) {
      types.push_back(t);
      continue;
    }
    q.push_back(x);
  }
  auto has = [&](const char *x) {
    for (auto &y : q)
      if (y == x) return true;
    return false;
  };
  // Takes the known qualifiers out of q; anything left means the instruction is not decoded.
  auto take = [&](std::initializer_list<const char *> allowed) {
    std::vector<std::string> left;
    for (auto &y : q) {
      bool ok = false;
      for (auto a : allowed)
        if (y == a) ok = true;
      if (!ok) left.push_back(y);
    }
    q = left;
  };
  auto done = [&]() { return q.empty(); };
  ins.ty = types.empty() ? Ty::None : types[0];
  // The scope an instruction names (each opcode below takes the qualifier it allows out of q).
  ins.scope = has("sys")       ? kScopeSys
              : has("gpu")     ? kScopeGpu
              : has("cluster") ? kScopeCluster
              : has("cta")     ? kScopeCta
                               : kScopeNone;
  const int n = ins.nops;

  // ---- moves, arithmetic ----
  if (base == "mov") {
    if (types.size() != 1 || n != 2 || !done()) return false;
    if (ins.o[1].k == Operand::Vec)
      ins.op = Op::MovPack;
    else if (ins.o[0].k == Operand::Vec)
      ins.op = Op::MovUnpack;
    else
      ins.op = Op::Mov;
    return true;
  }
  static const std::map<std::string, Op> arith = {
      {"add", Op::Add},   {"sub", Op::Sub}, {"min", Op::Min}, {"max", Op::Max},   {"abs", Op::Abs},
      {"neg", Op::Neg},   {"and", Op::And}, {"or", Op::Or},   {"xor", Op::Xor},   {"not", Op::Not},
      {"cnot", Op::CNot}, {"shl", Op::Shl}, {"shr", Op::Shr}, {"popc", Op::Popc}, {"clz", Op::Clz},
      {"brev", Op::Brev}, {"bfe", Op::Bfe}, {"bfi", Op::Bfi}, {"div", Op::Div},   {"rem", Op::Rem}};
  // Packed f16x2/bf16x2: moves, loads, stores, conversions and the arithmetic below, each half on
  // its own; anything else (setp, the .NaN and .relu forms, ex2) is refused, never computed as
  // one value.
  static const std::set<std::string> packed = {"mov", "ld",  "st",  "cvt", "selp", "add", "sub",
                                               "mul", "fma", "min", "max", "neg",  "abs"};
  for (Ty t : types)
    if ((t == Ty::F16x2 || t == Ty::BF16x2) && !packed.count(base)) return false;
  if (auto it = arith.find(base); it != arith.end()) {
    if (types.size() != 1) return false;
    ins.op = it->second;
    ins.ftz = has("ftz");
    ins.sat = has("sat");
    // Float rounding other than to nearest is not modelled: refused, not approximated.
    take({"ftz", "sat", "rn", "full", "approx", "cc"});
    if (has("rz") || has("rm") || has("rp")) return false;
    if (!done()) return false;
    if (ins.sat && !tyFloat(ins.ty)) return false;  // integer saturation: not modelled
    if (base == "popc" || base == "clz") ins.ty2 = ins.ty;
    return true;
  }
  if (base == "mul" || base == "mad") {
    if (types.size() != 1) return false;
    bool wide = has("wide"), hi = has("hi");
    ins.ftz = has("ftz");
    ins.sat = has("sat");
    take({"wide", "hi", "lo", "ftz", "sat", "rn"});
    if (!done() || (ins.sat && !tyFloat(ins.ty))) return false;
    if (base == "mul")
      ins.op = wide ? Op::MulWide : hi ? Op::MulHi : Op::Mul;
    else
      ins.op = wide ? Op::MadWide : hi ? Op::MadHi : Op::Mad;
    return true;
  }
  if (base == "fma") {
    if (types.size() != 1 || !tyFloat(ins.ty)) return false;
    ins.ftz = has("ftz");
    ins.sat = has("sat");
    take({"rn", "ftz", "sat"});
    if (!done()) return false;
    ins.op = Op::Fma;
    return true;
  }
  // ---- bit and integer operations ----
  if (base == "prmt") {
    static const std::map<std::string, uint8_t> modes = {{"f4e", 1}, {"b4e", 2}, {"ecl", 4},
                                                         {"rc8", 3}, {"ecr", 5}, {"rc16", 6}};
    if (types.size() != 1 || ins.ty != Ty::B32 || n != 4 || q.size() > 1) return false;
    if (q.size() == 1) {
      auto it = modes.find(q[0]);
      if (it == modes.end()) return false;
      ins.cmp = it->second;
    }
    ins.op = Op::Prmt;
    return true;
  }
  if (base == "shf") {
    if (types.size() != 1 || ins.ty != Ty::B32 || n != 4 || q.size() != 2) return false;
    if ((q[0] != "l" && q[0] != "r") || (q[1] != "wrap" && q[1] != "clamp")) return false;
    ins.cmp = (q[0] == "r" ? 1 : 0) | (q[1] == "clamp" ? 2 : 0);
    ins.op = Op::Shf;
    return true;
  }
  if (base == "dp4a" || base == "dp2a") {
    auto int32 = [](Ty t) { return t == Ty::U32 || t == Ty::S32; };
    if (types.size() != 2 || !int32(types[0]) || !int32(types[1]) || n != 4) return false;
    ins.ty = types[0];
    ins.ty2 = types[1];
    if (base == "dp2a") {
      if (q.size() != 1 || (q[0] != "lo" && q[0] != "hi")) return false;
      ins.uni = q[0] == "hi";
      ins.op = Op::Dp2a;
      return true;
    }
    ins.op = Op::Dp4a;
    return done();
  }
  if (base == "mul24" || base == "mad24") {
    // mad24.hi.sat.s32 saturates: not modelled, refused
    if (types.size() != 1 || (ins.ty != Ty::U32 && ins.ty != Ty::S32)) return false;
    if (q.size() != 1 || (q[0] != "lo" && q[0] != "hi")) return false;
    if (n != (base == "mul24" ? 3 : 4)) return false;
    ins.uni = q[0] == "hi";
    ins.op = base == "mul24" ? Op::Mul24 : Op::Mad24;
    return true;
  }
  if (base == "copysign") {
    if (types.size() != 1 || (ins.ty != Ty::F32 && ins.ty != Ty::F64) || n != 3 || !done())
      return false;
    ins.op = Op::Copysign;
    return true;
  }
  if (base == "testp") {
    static const std::map<std::string, uint8_t> tests = {
        {"finite", 0}, {"infinite", 1}, {"number", 2},
        {"notanumber", 3}, {"normal", 4}, {"subnormal", 5}};
    if (types.size() != 1 || (ins.ty != Ty::F32 && ins.ty != Ty::F64) || n != 2 || q.size() != 1)
      return false;
    auto it = tests.find(q[0]);
    if (it == tests.end()) return false;
    ins.cmp = it->second;
    ins.op = Op::Testp;
    return true;
  }
  if (base == "slct") {
    if (types.size() != 2 || (types[1] != Ty::S32 && types[1] != Ty::F32) || n != 4) return false;
    if (types[0] == Ty::F16 || types[0] == Ty::F16x2 || types[0] == Ty::BF16 ||
        types[0] == Ty::BF16x2 || types[0] == Ty::Pred || tyBits(types[0]) < 16)
      return false;
    ins.ty = types[0];
    ins.ty2 = types[1];
    ins.ftz = has("ftz");
    take({"ftz"});
    if (!done() || (ins.ftz && ins.ty2 != Ty::F32)) return false;
    ins.op = Op::Slct;
    return true;
  }
  if (base == "isspacep") {
    if (n != 2 || q.size() != 1 || !types.empty()) return false;
    if (q[0] == "param" || q[0] == "param::entry") {
      ins.space = Space::Param;
    } else {
      bool ok;
      ins.space = spaceOf(q[0], &ok);
      if (!ok) return false;
    }
    ins.op = Op::Isspacep;
    return true;
  }
  if (base == "nanosleep") {
    if (types.size() != 1 || ins.ty != Ty::U32 || n != 1 || !done()) return false;
    ins.op = Op::Nanosleep;
    return true;
  }
  if (base == "redux") {
    // redux.sync.{add,min,max}.{u32,s32}, redux.sync.{and,or,xor}.b32; the f32 forms (sm_100a)
    // are not decoded.
    static const std::map<std::string, uint8_t> ops = {{"add", 0}, {"min", 1}, {"max", 2},
                                                       {"and", 3}, {"or", 4},  {"xor", 5}};
    take({"sync"});
    if (types.size() != 1 || n != 3 || q.size() != 1) return false;
    auto it = ops.find(q[0]);
    if (it == ops.end()) return false;
    const bool arith_op = it->second <= 2;
    if (arith_op ? (ins.ty != Ty::U32 && ins.ty != Ty::S32) : ins.ty != Ty::B32) return false;
    ins.cmp = it->second;
    ins.op = Op::Redux;
    return true;
  }
  if (base == "match") {
    take({"sync"});
    if (types.size() != 1 || (ins.ty != Ty::B32 && ins.ty != Ty::B64) || n != 3 || q.size() != 1)
      return false;
    if (q[0] != "any" && q[0] != "all") return false;
    ins.uni = q[0] == "all";
    if (!ins.uni && ins.o[0].reg2 != kNone) return false;  // only match.all writes a predicate
    ins.op = Op::Match;
    return true;
  }
  static const std::map<std::string, Op> unary_f = {
      {"sqrt", Op::Sqrt}, {"rsqrt", Op::Rsqrt}, {"rcp", Op::Rcp}, {"ex2", Op::Ex2},
      {"lg2", Op::Lg2},   {"sin", Op::Sin},     {"cos", Op::Cos}, {"tanh", Op::Tanh}};
  if (auto it = unary_f.find(base); it != unary_f.end()) {
    if (types.size() != 1 || (ins.ty != Ty::F32 && ins.ty != Ty::F64)) return false;
    ins.ftz = has("ftz");
    take({"rn", "approx", "ftz", "full"});
    if (!done()) return false;
    ins.op = it->second;
    return true;
  }
  if (base == "setp") {
    if (types.size() != 1 || q.empty()) return false;
    ins.cmp = cmpOf(q[0]);
    if (!ins.cmp) return false;
    q.erase(q.begin());
    ins.ftz = has("ftz");
    take({"ftz"});
    if (!q.empty()) {
      if (q[0] == "and")
        ins.bool_op = 1;
      else if (q[0] == "or")
        ins.bool_op = 2;
      else if (q[0] == "xor")
        ins.bool_op = 3;
      else
        return false;
      q.erase(q.begin());
    }
    if (!done()) return false;
    ins.op = Op::Setp;
    // `setp.lt.s32 p|q, a, b`: the second destination (the complement) is in reg2.
    return true;
  }
  if (base == "selp") {
    if (types.size() != 1 || !done() || n != 4) return false;
    ins.op = Op::Selp;
    return true;
  }
  if (base == "cvt") {
    if (types.size() != 2) return false;
    ins.ty = types[0];
    ins.ty2 = types[1];
    ins.ftz = has("ftz");
    ins.sat = has("sat");
    static const std::map<std::string, std::pair<uint8_t, bool>> r = {
        {"rn", {1, false}}, {"rz", {2, false}}, {"rm", {3, false}}, {"rp", {4, false}},
        {"rni", {1, true}}, {"rzi", {2, true}}, {"rmi", {3, true}}, {"rpi", {4, true}}};
    for (auto &[k, v] : r)
      if (has(k.c_str())) {
        ins.rnd = v.first;
        ins.irnd = v.second;
      }
    take({"ftz", "sat", "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi"});
    if (!done()) return false;
    // cvt.rn.{f16x2,bf16x2}.f32 d, a, b: a to the upper half, b to the lower
    const bool packed = ins.ty == Ty::F16x2 || ins.ty == Ty::BF16x2;
    if (packed && !(ins.ty2 == Ty::F32 && n == 3 && ins.rnd == 1 && !ins.irnd && !ins.sat))
      return false;
    if (!packed && n != 2) return false;
    if (ins.ty2 == Ty::F16x2 || ins.ty2 == Ty::BF16x2) return false;
    ins.op = Op::Cvt;
    return true;
  }
  if (base == "cvta") {
    bool to = has("to");
    take({"to"});
    if (q.size() != 1) return false;
    bool ok;
    ins.space = spaceOf(q[0], &ok);
    // cvta.const: a const address is the host address of its variable's storage already, as
    // ld.const reads it; the generic address is the same. cvta.to.const is not decoded.
    if (!ok || (to && ins.space == Space::Const)) return false;
    ins.op = to ? Op::CvtaTo : Op::Cvta;
    return true;
  }
  // ---- memory ----
  if (base == "ld" || base == "st") {
    if (types.size() != 1) return false;
    ins.release = base == "st" && has("release");
    for (auto &x : q) {
      bool ok;
      Space s = spaceOf(x, &ok);
      if (ok) ins.space = s;
    }
    ins.read_only = has("nc");
    if (has("v2")) ins.vec = 2;
    if (has("v4")) ins.vec = 4;
    if (has("v8")) ins.vec = 8;
    std::vector<std::string> left;
    for (auto &x : q) {
      bool ok;
      spaceOf(x, &ok);
      if (ok || x == "v2" || x == "v4" || x == "v8" || x == "nc" || x == "volatile" ||
          x == "relaxed" || x == "weak" || x == "acquire" || x == "release" || x == "cta" ||
          x == "cluster" || x == "gpu" || x == "sys" || x == "ca" || x == "cg" || x == "cs" ||
          x == "lu" || x == "cv" || x == "wb" || x == "wt" || x.rfind("L1::", 0) == 0 ||
          x.rfind("L2::", 0) == 0)
        continue;
      left.push_back(x);
    }
    // .L2::cache_hint: a cache policy (createpolicy's) as the last operand, a hint to the L2 and
    // nothing the access reads or writes: dropped.
    const int k = has("L2::cache_hint") ? n - 1 : n;
    if (!left.empty() || k != 2) return false;
    ins.nops = (uint8_t)k;
    ins.op = base == "ld" ? Op::Ld : Op::St;
    return true;
  }
  if (base == "prefetch" || base == "prefetchu") {
    ins.op = Op::Nop;  // a cache hint: no effect on what the program computes
    return true;
  }
  if (base == "atom" || base == "red") {
    static const std::map<std::string, uint8_t> ops = {
        {"add", 1}, {"min", 2},  {"max", 3}, {"and", 4}, {"or", 5},
        {"xor", 6}, {"exch", 7}, {"inc", 8}, {"dec", 9}, {"cas", 10}};
    if (types.size() != 1) return false;
    for (auto &x : q) {
      bool ok;
      Space s = spaceOf(x, &ok);
      if (ok) ins.space = s;
      if (auto it = ops.find(x); it != ops.end()) ins.cmp = it->second;
    }
    ins.release = has("release") || has("acq_rel");
    if (!ins.cmp || (ins.space != Space::Global && ins.space != Space::Shared &&
                     ins.space != Space::SharedCluster && ins.space != Space::Generic))
      return false;
    for (auto &x : q) {
      bool ok;
      spaceOf(x, &ok);
      if (!ok && !ops.count(x) && x != "relaxed" && x != "acq_rel" && x != "acquire" &&
          x != "release" && x != "gpu" && x != "cta" && x != "cluster" && x != "sys" &&
          x != "noftz" && x != "L2::cache_hint")
        return false;
    }
    // .L2::cache_hint: the cache policy, last, is dropped (a hint to the L2).
    if (has("L2::cache_hint")) {
      if (n < 3) return false;
      ins.nops = (uint8_t)(n - 1);
    }
    ins.op = base == "atom" ? Op::Atom : Op::Red;
    return true;
  }
  // ---- createpolicy: an opaque L2 cache policy for the .L2::cache_hint operands, which the
  // emulator drops. It returns one fixed value per primary priority (CUTLASS's CacheHintSm90
  // constants), whatever the fraction or range. The .cvt form (from a host access property) is
  // not decoded.
  if (base == "createpolicy") {
    if (types.size() != 1 || types[0] != Ty::B64 || q.empty() || ins.o[0].k != Operand::Reg)
      return false;
    const bool fractional = q[0] == "fractional", range = q[0] == "range";
    if (fractional ? (n != 1 && n != 2) : range ? n != 4 : true) return false;
    if (fractional && n == 2 && ins.o[1].k != Operand::Reg && ins.o[1].k != Operand::Imm)
      return false;
    q.erase(q.begin());
    if (range && !q.empty() && q[0] == "global") q.erase(q.begin());
    static const std::map<std::string, uint64_t> prio = {
        {"L2::evict_normal", 0x1000000000000000ull},
        {"L2::evict_first", 0x12F0000000000000ull},
        {"L2::evict_last", 0x14F0000000000000ull},
        {"L2::evict_unchanged", 0x1000000000000000ull}};
    // primary{.secondary}: the secondary is evict_first or evict_unchanged
    if (q.empty() || q.size() > 2 || !prio.count(q[0])) return false;
    if (q.size() == 2 && q[1] != "L2::evict_first" && q[1] != "L2::evict_unchanged") return false;
    ins.op = Op::Mov;
    ins.ty = Ty::B64;
    ins.o[1] = Operand{};
    ins.o[1].k = Operand::Imm;
    ins.o[1].imm = (int64_t)prio.at(q[0]);
    ins.nops = 2;
    return true;
  }
  // ---- control ----
  if (base == "ret") {
    ins.op = Op::Ret;
    return done() && n == 0;
  }
  if (base == "exit") {
    ins.op = Op::Exit;
    return done() && n == 0;
  }
  if (base == "trap") {
    ins.op = Op::Trap;
    return true;
  }
  if (base == "brkpt") {  // CUTLASS's debug builds stop there on a misused pipeline
    ins.op = Op::Brkpt;
    return n == 0;
  }
  // ---- barriers and collectives ----
  if (base == "barrier" && has("cluster")) {
    take({"cluster", "aligned"});
    if (n != 0 || q.empty()) return false;
    if (q[0] == "arrive" &&
        (q.size() == 1 || (q.size() == 2 && (q[1] == "release" || q[1] == "relaxed")))) {
      ins.op = Op::ClusterArrive;
      ins.release = q.size() == 1 || q[1] == "release";  // .release by default
      return true;
    }
    if (q[0] == "wait" && (q.size() == 1 || (q.size() == 2 && q[1] == "acquire"))) {
      ins.op = Op::ClusterWait;
      return true;
    }
    return false;
  }
  if (base == "mapa" || base == "getctarank") {
    if (types.size() != 1 || (ins.ty != Ty::U32 && ins.ty != Ty::U64)) return false;
    if (has("shared::cluster")) ins.space = Space::SharedCluster;
    take({"shared::cluster"});
    if (!done() || n != (base == "mapa" ? 3 : 2)) return false;
    ins.op = base == "mapa" ? Op::Mapa : Op::GetCtaRank;
    return true;
  }
  if (base == "bar" || base == "barrier") {
    bool warp = has("warp");
    take({"cta", "aligned", "warp"});
    if (warp) {
      if (!has("sync") || n != 1) return false;
      ins.op = Op::BarWarpSync;
      return true;
    }
    if (q.size() != 1 || n < 1 || n > 2) return false;
    if (q[0] == "sync" || q[0] == "red") {
      if (q[0] == "red") return false;
      ins.op = Op::BarSync;
    } else if (q[0] == "arrive") {
      ins.op = Op::BarArrive;
    } else {
      return false;
    }
    return true;
  }
  if (base == "griddepcontrol") {
    if (q.size() != 1 || n != 0) return false;
    if (q[0] == "launch_dependents") {
      ins.op = Op::GridDepLaunch;
      return true;
    }
    if (q[0] == "wait") {
      ins.op = Op::GridDepWait;
      return true;
    }
    return false;
  }
  if (base == "setmaxnreg") {
    take({"sync", "aligned", "u32"});
    if (q.size() != 1 || n != 1 || (q[0] != "inc" && q[0] != "dec")) return false;
    ins.op = Op::SetMaxNReg;
    ins.cmp = q[0] == "inc";
    return true;
  }
  if (base == "shfl") {
    take({"sync"});
    if (q.size() != 1 || n != 5) return false;
    static const std::map<std::string, uint8_t> modes = {
        {"up", 0}, {"down", 1}, {"bfly", 2}, {"idx", 3}};
    auto it = modes.find(q[0]);
    if (it == modes.end()) return false;
    ins.cmp = it->second;
    ins.op = Op::Shfl;
    return true;
  }
  if (base == "elect") {  // elect.sync d|p, membermask (d may be the sink `_`)
    take({"sync"});
    if (!q.empty() || n != 2) return false;
    ins.op = Op::Elect;
    return true;
  }
  if (base == "vote") {
    take({"sync"});
    static const std::map<std::string, uint8_t> modes = {
        {"all", 0}, {"any", 1}, {"uni", 2}, {"ballot", 3}};
    if (q.size() != 1 || n != 3) return false;
    auto it = modes.find(q[0]);
    if (it == modes.end()) return false;
    ins.cmp = it->second;
    ins.op = Op::Vote;
    return true;
  }
  if (base == "fence" || base == "membar") {
    ins.op = Op::Fence;
    // the fence's name, as the runtime records it: fence.proxy.async refreshes the async view
    std::string w;
    for (auto &x : quals) w += (w.empty() ? "" : ".") + x;
    if (base == "membar") w = "membar." + w;
    ins.o[0].k = Operand::Imm;
    ins.o[0].imm = 0;
    static std::set<std::string> known = {"sc.cta",
                                          "sc.gpu",
                                          "sc.sys",
                                          "acq_rel.cta",
                                          "acq_rel.gpu",
                                          "acq_rel.sys",
                                          "cta",
                                          "gpu",
                                          "sys",
                                          "acq_rel.cluster",
                                          "sc.cluster",
                                          "membar.cta",
                                          "membar.gl",
                                          "membar.sys",
                                          "proxy.async",
                                          "proxy.async.shared::cta",
                                          "proxy.async.shared::cluster",
                                          "proxy.async.global",
                                          "mbarrier_init.release.cluster",
                                          "proxy.tensormap::generic.release.gpu"};
    if (!known.count(w)) return false;
    // Remember the name: the Function's text keeps the instruction; the interpreter asks
    // whether it is a proxy fence of shared memory (imm = 1) or another (imm = 0).
    if (w.rfind("proxy.async", 0) == 0 && w.find("global") == std::string::npos)
      ins.o[0].imm = 1;
    else if (w == "mbarrier_init.release.cluster")
      ins.o[0].imm = 2;
    // Every fence but the proxy fences and fence.mbarrier_init (which releases the barrier inits
    // only) is .sc or .acq_rel: it releases the thread's earlier writes at its scope.
    if (ins.o[0].imm == 0 && w.rfind("proxy.", 0) != 0) {
      ins.release = true;
      if (base == "membar")
        ins.scope = w == "membar.cta" ? kScopeCta : w == "membar.gl" ? kScopeGpu : kScopeSys;
    }
    ins.nops = 0;
    return true;
  }
  // ---- mbarrier ----
  if (base == "mbarrier") {
    if (has("shared") || has("shared::cta")) ins.space = Space::Shared;
    // A shared::cluster address: an arrive (with the sink `_` as its state), expect_tx or
    // complete_tx may name a barrier of another CTA of the cluster; init and the waits may not.
    const bool remote = has("shared::cluster");
    if (remote) ins.space = Space::SharedCluster;
    const bool relaxed = has("relaxed");
    take({"shared::cta", "shared::cluster", "shared", "b64", "release", "acquire", "cta", "cluster",
          "relaxed"});
    std::string what;
    for (auto &x : q) what += (what.empty() ? "" : ".") + x;
    if (what == "init" && n == 2)
      ins.op = Op::MbarInit;
    else if (what == "inval" && n == 1)
      ins.op = Op::MbarInval;
    else if (what == "arrive" && (n == 2 || n == 3))
      ins.op = Op::MbarArrive;
    else if (what == "arrive.expect_tx" && n == 3)
      ins.op = Op::MbarArriveExpectTx;
    else if (what == "arrive_drop" && (n == 2 || n == 3))
      ins.op = Op::MbarArriveDrop;
    else if (what == "expect_tx" && n == 2)
      ins.op = Op::MbarExpectTx;
    else if (what == "complete_tx" && n == 2)
      ins.op = Op::MbarCompleteTx;
    else if (what == "try_wait.parity" && (n == 3 || n == 4))
      ins.op = Op::MbarTryWaitParity;
    else if (what == "test_wait.parity" && n == 3)
      ins.op = Op::MbarTestWaitParity;
    else if (what == "try_wait" && (n == 3 || n == 4))
      ins.op = Op::MbarTryWait;
    else if (what == "test_wait" && n == 3)
      ins.op = Op::MbarTestWait;
    else
      return false;
    // An arrive releases the thread's earlier writes unless it is .relaxed, at .cta scope unless
    // it names another.
    if (ins.op == Op::MbarArrive || ins.op == Op::MbarArriveExpectTx ||
        ins.op == Op::MbarArriveDrop)
      ins.release = !relaxed;
    if (remote && ins.op != Op::MbarExpectTx && ins.op != Op::MbarCompleteTx &&
        !((ins.op == Op::MbarArrive || ins.op == Op::MbarArriveExpectTx ||
           ins.op == Op::MbarArriveDrop) &&
          ins.o[0].k == Operand::Sink))
      return false;
    return true;
  }
  // ---- wgmma (the runtime's wgmma.cpp: m64nNk16 bf16/f16, m64nNk8 tf32, f32 accumulators) ----
  if (base == "wgmma") {
    take({"sync", "aligned"});
    if (q.size() == 1 && q[0] == "fence" && n == 0) {
      ins.op = Op::WgmmaFence;
      return true;
    }
    if (q.size() == 1 && q[0] == "commit_group" && n == 0) {
      ins.op = Op::WgmmaCommit;
      return true;
    }
    if (q.size() == 1 && q[0] == "wait_group" && n == 1 && ins.o[0].k == Operand::Imm) {
      ins.op = Op::WgmmaWait;
      return true;
    }
    // tf32 is no register type here (it stays among the qualifiers): .f32.tf32.tf32.
    const bool tf32 = q.size() == 4 && q[2] == "tf32" && q[3] == "tf32" && types.size() == 1;
    if (tf32) {
      q.resize(2);
      types.push_back(Ty::B32);
      types.push_back(Ty::B32);
    }
    if (q.size() != 2 || q[0] != "mma_async" || types.size() != 3 || types[0] != Ty::F32)
      return false;
    const std::string &shape = q[1];  // m64nNkK
    size_t np = shape.find('n'), kp = shape.find('k');
    if (shape.rfind("m64", 0) != 0 || np == std::string::npos || kp == std::string::npos)
      return false;
    ins.rank = std::atoi(shape.substr(np + 1, kp - np - 1).c_str());
    const int k = std::atoi(shape.substr(kp + 1).c_str());
    if (types[1] != types[2]) return false;
    if (types[1] == Ty::BF16 && k == 16)
      ins.cmp = 0;
    else if (types[1] == Ty::F16 && k == 16)
      ins.cmp = 1;
    else if (tf32 && k == 8)
      ins.cmp = 2;
    else
      return false;  // the 8-bit types: not decoded here
    if (ins.o[0].k != Operand::Vec || ins.o[0].imm != ins.rank / 2) return false;
    ins.uni = ins.o[1].k == Operand::Vec;  // A from registers
    // tf32 has no transpose operands (its operands are K-major only): one operand fewer.
    const int trans = tf32 ? 0 : (ins.uni ? 1 : 2);
    if (ins.uni ? (n != 6 + trans || ins.o[1].imm != 4) : n != 6 + trans) return false;
    ins.op = Op::Wgmma;
    return true;
  }
  // ---- tcgen05 (the runtime's tcgen05.cpp): cta_group::1, tensor memory of the executing CTA.
  // Every form not listed here (cta_group::2, tcgen05.shift, the decompressing cp, the ld shapes
  // other than 32x32b, .pack::16b, mma with A in tensor memory, disable-output-lane or
  // scale-input-d, the .ws, .sp and block-scaled mmas, other kinds, a multicast commit) is not
  // decoded: refused by name.
  if (base == "tcgen05") {
    if (q.empty()) return false;
    const std::string what = q[0];
    q.erase(q.begin());
    if (what == "fence::before_thread_sync" || what == "fence::after_thread_sync") {
      if (!done() || n != 0 || !types.empty()) return false;
      ins.op = Op::TcFence;
      ins.o[0].k = Operand::Imm;
      ins.o[0].imm = what == "fence::after_thread_sync";
      return true;
    }
    if (what == "wait::ld" || what == "wait::st") {
      take({"sync", "aligned"});
      if (!done() || n != 0 || !types.empty()) return false;
      ins.op = what == "wait::ld" ? Op::TcWaitLd : Op::TcWaitSt;
      return true;
    }
    if (what == "st") {
      // [taddr]{, split}, {regs}: split is the .16x32bx2 shape's immediate half offset.
      take({"sync", "aligned"});
      ins.uni = has("unpack::16b");
      take({"unpack::16b"});
      static const std::map<std::string, ptx::TcShape> shapes = {
          {"32x32b", ptx::TcShape::S32x32b},   {"16x64b", ptx::TcShape::S16x64b},
          {"16x128b", ptx::TcShape::S16x128b}, {"16x256b", ptx::TcShape::S16x256b},
          {"16x32bx2", ptx::TcShape::S16x32bx2}};
      if (q.size() != 2 || !shapes.count(q[0]) || q[1].size() < 2 || q[1][0] != 'x') return false;
      const ptx::TcShape shape = shapes.at(q[0]);
      const int num = std::atoi(q[1].c_str() + 1);
      const int nregs = ptx::tcgen05_st_regs(shape, num);
      const bool x2 = shape == ptx::TcShape::S16x32bx2;
      const Operand &regs = ins.o[x2 ? 2 : 1];
      if (!nregs || types.size() != 1 || types[0] != Ty::B32 || n != (x2 ? 3 : 2) ||
          ins.o[0].k != Operand::Addr || regs.k != Operand::Vec || regs.imm != nregs ||
          (x2 && ins.o[1].k != Operand::Imm))
        return false;
      for (int i = 0; i < nregs; ++i) {
        const Operand &e = fn->vec[regs.reg + i];
        if (e.k != Operand::Reg && e.k != Operand::Imm) return false;
      }
      ins.cmp = (uint8_t)shape;
      ins.rank = num;
      ins.op = Op::TcSt;
      return true;
    }
    auto one = [&] {  // cta_group::1 is the only group decoded
      bool g = has("cta_group::1");
      take({"cta_group::1"});
      return g;
    };
    if (what == "alloc") {
      if (!one()) return false;
      take({"sync", "aligned", "shared::cta"});
      if (!done() || n != 2 || types.size() != 1 || types[0] != Ty::B32 ||
          ins.o[0].k != Operand::Addr || ins.o[1].k == Operand::Vec)
        return false;
      ins.space = Space::Shared;
      ins.op = Op::TcAlloc;
      return true;
    }
    if (what == "dealloc") {
      if (!one()) return false;
      take({"sync", "aligned"});
      if (!done() || n != 2 || types.size() != 1 || types[0] != Ty::B32 ||
          ins.o[0].k == Operand::Vec || ins.o[0].k == Operand::Addr || ins.o[1].k == Operand::Vec ||
          ins.o[1].k == Operand::Addr)
        return false;
      ins.op = Op::TcDealloc;
      return true;
    }
    if (what == "relinquish_alloc_permit") {
      if (!one()) return false;
      take({"sync", "aligned"});
      if (!done() || n != 0 || !types.empty()) return false;
      ins.op = Op::TcRelinquish;
      return true;
    }
    if (what == "mma") {
      if (!one() || q.size() != 1 || !types.empty()) return false;
      if (q[0] == "kind::f16")
        ins.cmp = 0;
      else if (q[0] == "kind::tf32")
        ins.cmp = 1;
      else
        return false;
      // [d], a-desc, b-desc, idesc, enable-input-d: A from shared memory (a descriptor), no
      // disable-output-lane and no scale-input-d.
      if (n != 5 || ins.o[0].k != Operand::Addr) return false;
      for (int i = 1; i < 5; ++i)
        if (ins.o[i].k != Operand::Reg && ins.o[i].k != Operand::Imm) return false;
      ins.op = Op::TcMma;
      return true;
    }
    if (what == "cp") {
      // [taddr], s-desc. The decompressing forms (.b8x16.b6x16_p32, .b8x16.b4x16_p64) are not
      // decoded.
      if (!one() || !types.empty() || n != 2 || ins.o[0].k != Operand::Addr ||
          (ins.o[1].k != Operand::Reg && ins.o[1].k != Operand::Imm))
        return false;
      ptx::TcCpShape shape;
      if (q == std::vector<std::string>{"128x256b"})
        shape = ptx::TcCpShape::S128x256b;
      else if (q == std::vector<std::string>{"4x256b"})
        shape = ptx::TcCpShape::S4x256b;
      else if (q == std::vector<std::string>{"128x128b"})
        shape = ptx::TcCpShape::S128x128b;
      else if (q == std::vector<std::string>{"64x128b", "warpx2::02_13"})
        shape = ptx::TcCpShape::S64x128b_02_13;
      else if (q == std::vector<std::string>{"64x128b", "warpx2::01_23"})
        shape = ptx::TcCpShape::S64x128b_01_23;
      else if (q == std::vector<std::string>{"32x128b", "warpx4"})
        shape = ptx::TcCpShape::S32x128b_x4;
      else
        return false;
      ins.cmp = (uint8_t)shape;
      ins.op = Op::TcCp;
      return true;
    }
    if (what == "commit") {
      if (!one()) return false;
      if (!has("mbarrier::arrive::one")) return false;
      ins.space = has("shared::cluster") ? Space::SharedCluster
                  : has("shared::cta")   ? Space::Shared
                                         : Space::Generic;
      take({"mbarrier::arrive::one", "shared::cluster", "shared::cta"});
      if (!done() || n != 1 || types.size() != 1 || types[0] != Ty::B64 ||
          ins.o[0].k != Operand::Addr)
        return false;
      ins.op = Op::TcCommit;
      return true;
    }
    if (what == "ld") {
      take({"sync", "aligned"});
      if (q.size() != 2 || q[0] != "32x32b" || q[1].size() < 2 || q[1][0] != 'x') return false;
      const int num = std::atoi(q[1].c_str() + 1);
      if (num < 1 || num > 128 || (num & (num - 1)) || types.size() != 1 || types[0] != Ty::B32 ||
          n != 2 || ins.o[0].k != Operand::Vec || ins.o[0].imm != num ||
          ins.o[1].k != Operand::Addr)
        return false;
      for (int i = 0; i < num; ++i)
        if (fn->vec[ins.o[0].reg + i].k != Operand::Reg) return false;
      ins.rank = num;
      ins.op = Op::TcLd;
      return true;
    }
    return false;
  }
  // ---- ldmatrix / stmatrix (the runtime's sync.cpp): m8n8 .b16 only; the m16n16 and m16n8
  // 8-bit shapes of sm_100 are not decoded ----
  if (base == "ldmatrix" || base == "stmatrix") {
    take({"sync", "aligned"});
    ins.uni = has("trans");
    if (has("shared") || has("shared::cta")) ins.space = Space::Shared;
    take({"trans", "shared", "shared::cta"});
    if (q.size() != 2 || q[0] != "m8n8" || types.size() != 1 || types[0] != Ty::B16) return false;
    if (q[1] != "x1" && q[1] != "x2" && q[1] != "x4") return false;
    ins.rank = q[1][1] - '0';
    const bool ld = base == "ldmatrix";
    const Operand &regs = ins.o[ld ? 0 : 1], &at = ins.o[ld ? 1 : 0];
    if (n != 2 || at.k != Operand::Addr || regs.k != Operand::Vec || regs.imm != ins.rank)
      return false;
    for (int i = 0; i < ins.rank; ++i) {
      const Operand &e = fn->vec[regs.reg + i];
      if (e.k != Operand::Reg && (ld || e.k != Operand::Imm)) return false;
    }
    ins.op = ld ? Op::Ldmatrix : Op::Stmatrix;
    return true;
  }
  // ---- cp.reduce.async.bulk: reductions into global memory, bulk-group completion ----
  if (base == "cp" && !q.empty() && q[0] == "reduce") {
    // .L2::cache_hint: a cache policy as the last operand, dropped (a hint to the L2).
    if (has("L2::cache_hint")) {
      take({"L2::cache_hint"});
      ins.nops = (uint8_t)(n - 1);
    }
    const int k = ins.nops;
    static const std::map<std::string, uint8_t> red = {{"add", 0}, {"min", 1}, {"max", 2},
                                                       {"and", 3}, {"or", 4},  {"xor", 5},
                                                       {"inc", 7}, {"dec", 8}};
    int op = -1;
    for (auto &x : q)
      if (auto it = red.find(x); it != red.end()) op = it->second;
    if (op < 0 || !has("async") || !has("bulk") || !has("global") || !has("shared::cta") ||
        !has("bulk_group"))
      return false;
    ins.cmp = (uint8_t)op;
    const bool tensor = has("tensor");
    std::string dim;
    for (auto &x : q)
      if (x.size() == 2 && x[1] == 'd' && x[0] >= '1' && x[0] <= '5') dim = x;
    const bool noftz = has("noftz");
    take({"reduce", "async", "bulk", "global", "shared::cta", "bulk_group", "tensor", "tile",
          "add", "min", "max", "and", "or", "xor", "inc", "dec", "noftz"});
    if (!dim.empty()) take({dim.c_str()});
    if (!done()) return false;  // im2col and the shared::cluster destination: not decoded
    if (tensor) {
      // The element type is the tensor map's, known when the reduction runs (tma.cpp).
      if (dim.empty() || !types.empty() || noftz || k != 3 || ins.o[0].k != Operand::Addr ||
          ins.o[1].k != Operand::Vec || ins.o[2].k != Operand::Addr)
        return false;
      ins.rank = dim[0] - '0';
      if (ins.o[1].imm != ins.rank) return false;
      ins.op = Op::TmaReduce;
      return true;
    }
    if (!dim.empty() || types.size() != 1 || k != 3 || ins.o[0].k != Operand::Addr ||
        ins.o[1].k != Operand::Addr)
      return false;
    const Ty t = types[0];
    const bool fl = tyFloat(t), half = t == Ty::F16 || t == Ty::BF16;
    // The PTX ISA's combinations: f16/bf16 add only with .noftz; no bitwise, inc or dec on
    // floats; inc and dec on .u32 only.
    if (t == Ty::F16x2 || t == Ty::BF16x2 || tyBits(t) < 16 || (tyBits(t) == 16 && !half))
      return false;
    if (half && op == 0 && !noftz) return false;
    if (noftz && !(half && op == 0)) return false;
    if (fl && op >= 3) return false;
    if ((op == 7 || op == 8) && t != Ty::U32) return false;
    ins.op = Op::BulkReduce;
    return true;
  }
  // ---- Ampere cp.async: a thread's own asynchronous copy to shared memory ----
  if (base == "cp" && q.size() >= 2 && q[0] == "async" && q[1] != "bulk") {
    if (q.size() == 2 && q[1] == "commit_group" && n == 0 && types.empty()) {
      ins.op = Op::CpAsyncCommit;
      return true;
    }
    if (q.size() == 2 && q[1] == "wait_group" && n == 1 && ins.o[0].k == Operand::Imm &&
        types.empty()) {
      ins.op = Op::CpAsyncWait;
      return true;
    }
    if (q.size() == 2 && q[1] == "wait_all" && n == 0 && types.empty()) {
      ins.op = Op::CpAsyncWait;
      ins.uni = true;
      return true;
    }
    if (q[1] == "mbarrier") {
      ins.uni = has("noinc");
      ins.space = has("shared") || has("shared::cta") ? Space::Shared : Space::Generic;
      take({"async", "mbarrier", "arrive", "noinc", "shared", "shared::cta"});
      if (!done() || types.size() != 1 || types[0] != Ty::B64 || n != 1 ||
          ins.o[0].k != Operand::Addr)
        return false;
      ins.op = Op::CpAsyncMbarArrive;
      return true;
    }
    if (q[1] != "ca" && q[1] != "cg") return false;
    const bool cg = q[1] == "cg", hinted = has("L2::cache_hint");
    take({"async", "ca", "cg", "shared", "shared::cta", "global", "L2::cache_hint", "L2::64B",
          "L2::128B", "L2::256B"});
    if (!done() || !types.empty()) return false;
    const int k = hinted ? n - 1 : n;  // the cache policy, last: dropped
    if (k < 3 || k > 4 || ins.o[0].k != Operand::Addr || ins.o[1].k != Operand::Addr ||
        ins.o[2].k != Operand::Imm)
      return false;
    const int64_t size = ins.o[2].imm;
    if ((size != 4 && size != 8 && size != 16) || (cg && size != 16)) return false;
    ins.space = Space::Shared;
    ins.nops = (uint8_t)k;
    if (k == 4) {
      const Operand &x = ins.o[3];
      if (x.k == Operand::Reg && pred_regs.count(x.reg))
        ins.cmp = 2;  // ignore-src: a predicate
      else if (x.k == Operand::Reg || x.k == Operand::Imm)
        ins.cmp = 1;  // src-size
      else
        return false;
    }
    ins.op = Op::CpAsync;
    return true;
  }
  // ---- bulk copies ----
  if (base == "cp") {
    if (q.size() < 2 || q[0] != "async" || q[1] != "bulk") return false;
    std::vector<std::string> r(q.begin() + 2, q.end());
    // .L2::cache_hint adds a cache policy as the last operand: a hint to the L2, nothing the
    // copy's bytes or its barrier see. Decoded as the copy without it.
    int hinted = ins.nops;
    if (!r.empty() && r.back() == "L2::cache_hint") {
      r.pop_back();
      ins.nops = (uint8_t)--hinted;
    }
    const int n = hinted;
    auto is = [&](std::initializer_list<const char *> want) {
      if (r.size() != want.size()) return false;
      size_t i = 0;
      for (auto w : want)
        if (r[i++] != w) return false;
      return true;
    };
    if (is({"commit_group"})) {
      ins.op = Op::BulkCommit;
      return n == 0;
    }
    // Prefetches to the L2 change nothing the program computes; the tensor form's map is checked
    // as a TMA load's.
    if (is({"prefetch", "L2", "global"})) {
      ins.op = Op::Nop;
      return n == 2 && ins.o[0].k == Operand::Addr;
    }
    if (r.size() >= 3 && r[0] == "prefetch" && r[1] == "tensor") {
      if (r[2].size() != 2 || r[2][1] != 'd' || r[2][0] < '1' || r[2][0] > '5') return false;
      ins.rank = r[2][0] - '0';
      const std::vector<std::string> t(r.begin() + 3, r.end());
      if (t != std::vector<std::string>{"L2", "global"} &&
          t != std::vector<std::string>{"L2", "global", "tile"})
        return false;
      if (n != 2 || ins.o[0].k != Operand::Addr || ins.o[1].k != Operand::Vec ||
          ins.o[1].imm != ins.rank)
        return false;
      ins.op = Op::TmaPrefetch;
      return true;
    }
    if (is({"wait_group"}) || is({"wait_group", "read"})) {
      ins.op = Op::BulkWait;
      ins.read_only = r.size() == 2;
      return n == 1 && ins.o[0].k == Operand::Imm;
    }
    if (!r.empty() && r[0] == "tensor") {
      if (r.size() < 2 || r[1].size() != 2 || r[1][1] != 'd') return false;
      ins.rank = r[1][0] - '0';
      if (ins.rank < 1 || ins.rank > 5) return false;
      std::vector<std::string> t(r.begin() + 2, r.end());
      auto eq = [&](std::initializer_list<const char *> want) {
        if (t.size() != want.size()) return false;
        size_t i = 0;
        for (auto w : want)
          if (t[i++] != w) return false;
        return true;
      };
      if ((eq({"shared::cluster", "global", "mbarrier::complete_tx::bytes"}) ||
           eq({"shared::cta", "global", "mbarrier::complete_tx::bytes"}) ||
           eq({"shared::cluster", "global", "tile", "mbarrier::complete_tx::bytes"})) &&
          n == 4 && ins.o[2].k == Operand::Vec && ins.o[2].imm == ins.rank) {
        ins.op = Op::TmaLoad;
        return true;
      }
      if ((eq({"shared::cluster", "global", "mbarrier::complete_tx::bytes",
               "multicast::cluster"}) ||
           eq({"shared::cluster", "global", "tile", "mbarrier::complete_tx::bytes",
               "multicast::cluster"})) &&
          n == 5 && ins.o[2].k == Operand::Vec && ins.o[2].imm == ins.rank) {
        ins.op = Op::TmaLoadMulticast;
        return true;
      }
      if ((eq({"global", "shared::cta", "bulk_group"}) ||
           eq({"global", "shared::cta", "tile", "bulk_group"})) &&
          n == 3 && ins.o[1].k == Operand::Vec && ins.o[1].imm == ins.rank) {
        ins.op = Op::TmaStore;
        return true;
      }
      return false;
    }
    if ((is({"shared::cluster", "global", "mbarrier::complete_tx::bytes"}) ||
         is({"shared::cta", "global", "mbarrier::complete_tx::bytes"})) &&
        n == 4) {
      ins.op = Op::BulkLoad;
      return true;
    }
    if (is({"shared::cluster", "global", "mbarrier::complete_tx::bytes", "multicast::cluster"}) &&
        n == 5) {
      ins.op = Op::BulkLoadMulticast;
      return true;
    }
    if (is({"global", "shared::cta", "bulk_group"}) && n == 3) {
      ins.op = Op::BulkStore;
      return true;
    }
    return false;
  }
  return false;
}

// ---- the statement stream ----

std::string stripComments(const std::string &t) {
  std::string out;
  out.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '/' && i + 1 < t.size() && t[i + 1] == '/') {
      while (i < t.size() && t[i] != '\n') ++i;
      out += '\n';
      continue;
    }
    if (t[i] == '/' && i + 1 < t.size() && t[i + 1] == '*') {
      i += 2;
      while (i + 1 < t.size() && !(t[i] == '*' && t[i + 1] == '/')) {
        if (t[i] == '\n') out += '\n';
        ++i;
      }
      ++i;
      continue;
    }
    if (t[i] == '"') {  // a string (.file names): copied whole
      size_t e = t.find('"', i + 1);
      if (e == std::string::npos) e = t.size() - 1;
      out += t.substr(i, e - i + 1);
      i = e;
      continue;
    }
    out += t[i];
  }
  return out;
}

}  // namespace

bool parseModule(const std::string &text0, Module *mod, std::string *err) {
  Parser p(*mod);
  const std::string text = stripComments(text0);
  size_t i = 0;
  int line = 1;
  std::string cur;  // the statement being collected
  int cur_line = 1;
  int depth = 0;  // brace depth inside a function (0 = module scope)
  bool in_section = false;
  int section_depth = 0;

  auto lineDirective = [&](const std::string &d) -> bool {
    std::istringstream in(d);
    std::string kw;
    in >> kw;
    if (kw == ".loc") {
      int f = 0, l = 0, c = 0;
      in >> f >> l >> c;
      Loc loc;
      loc.file_no = f;
      loc.line = l;
      std::string rest;
      std::getline(in, rest);
      if (size_t at = rest.find("inlined_at"); at != std::string::npos) {
        std::istringstream r(rest.substr(at + 10));
        int pf = 0, pl = 0, pc = 0;
        r >> pf >> pl >> pc;
        auto it = p.loc_at.find({pf, pl, pc});
        if (it != p.loc_at.end()) {
          loc.parent = it->second;
        } else {
          Loc parent;
          parent.file_no = pf;
          parent.line = pl;
          mod->locs.push_back(parent);
          loc.parent = (int)mod->locs.size() - 1;
        }
      }
      mod->locs.push_back(loc);
      p.cur_loc = (uint32_t)mod->locs.size() - 1;
      p.loc_at[{f, l, c}] = (int)p.cur_loc;
      // A line 0 (`.loc 1 0 5`: code the compiler made up) keeps the enclosing line for messages.
      if (l == 0 && p.cur_loc > 1) mod->locs.back().line = mod->locs[p.cur_loc - 1].line;
      return true;
    }
    if (kw == ".file") {
      int n = 0;
      in >> n;
      std::string rest;
      std::getline(in, rest);
      size_t a = rest.find('"'), b = rest.find('"', a + 1);
      if (a != std::string::npos && b != std::string::npos)
        mod->file_names[n] = rest.substr(a + 1, b - a - 1);
      return true;
    }
    return true;  // .version, .target, .address_size: nothing to keep
  };

  auto finishFunction = [&]() -> bool {
    Function &f = *p.fn;
    for (auto &b : p.branches) {
      uint32_t target = kNone;
      for (auto s = b.scopes.rbegin(); s != b.scopes.rend() && target == kNone; ++s)
        if (auto it = p.labels.find({*s, b.label}); it != p.labels.end()) target = it->second;
      if (target == kNone) return p.fail("a branch to an unknown label " + b.label);
      f.code[b.ins].target = target;
    }
    p.branches.clear();
    p.labels.clear();
    p.fn_syms.clear();
    p.reg_scopes.clear();
    p.scope_ids.clear();
    p.pred_regs.clear();
    // a function falls off its end: a return
    Ins ret;
    ret.op = Op::Ret;
    ret.loc = p.cur_loc;
    f.code.push_back(ret);
    f.text.push_back("ret");
    p.fn = nullptr;
    return true;
  };

  // `.visible .entry name(.param ..., ...) .maxntid ...` up to its `{`
  auto startFunction = [&](const std::string &hdr) -> bool {
    Function f;
    f.entry = hdr.find(".entry") != std::string::npos;
    size_t kw = hdr.find(f.entry ? ".entry" : ".func");
    std::string after = trim(hdr.substr(kw + (f.entry ? 6 : 5)));
    std::string rets;
    if (!f.entry && !after.empty() && after[0] == '(') {
      // `.func (.param .b32 retval) name(...)`: its return parameters are declared like its
      // parameters. No call is decoded, so no .func runs; a kernel that calls one is refused
      // for its `call`.
      size_t close = after.find(')');
      rets = after.substr(1, close - 1);
      after = trim(after.substr(close + 1));
    }
    size_t paren = after.find('(');
    f.name = trim(after.substr(0, paren));
    mod->funcs.push_back(f);
    mod->func_by_name[f.name] = (uint32_t)mod->funcs.size() - 1;
    p.fn = &mod->funcs.back();
    p.reg_scopes.assign(1, {});
    p.scope_ids.assign(1, p.next_scope++);
    if (paren != std::string::npos || !rets.empty()) {
      size_t close = after.rfind(')');
      std::string list =
          paren == std::string::npos ? "" : after.substr(paren + 1, close - paren - 1);
      if (!rets.empty()) {
        list = rets + (list.empty() ? "" : ", " + list);
        p.fn->nrets = (uint32_t)splitOperands(rets).size();
      }
      for (auto &prm : splitOperands(list)) {
        std::string s = trim(prm);
        if (s.rfind(".param", 0) != 0) return p.fail("a parameter that is not .param: " + s);
        uint32_t id;
        if (!p.declVar(s.substr(6), Space::Param, true, &id)) return false;
        Var &v = mod->vars[id];
        if (v.bytes == 0) v.bytes = v.elem;
        p.fn->param_bytes = (p.fn->param_bytes + v.align - 1) / v.align * v.align;
        v.param_offset = p.fn->param_bytes;
        p.fn->param_bytes += v.bytes;
        p.fn->params.push_back(id);
      }
    }
    // The cluster dimensions a kernel asks for (__cluster_dims__): its launch runs them
    // (emu/host/cudart.cpp).
    if (size_t c = hdr.find(".reqnctapercluster"); c != std::string::npos) {
      std::istringstream in(hdr.substr(c + 18));
      long x = 1, y = 1, z = 1;
      char comma;
      in >> x;
      if (in >> comma >> y) in >> comma >> z;
      if (x < 1 || y < 1 || z < 1) return p.fail(".reqnctapercluster with a dimension below 1");
      p.fn->cluster_dims[0] = (uint32_t)x;
      p.fn->cluster_dims[1] = (uint32_t)y;
      p.fn->cluster_dims[2] = (uint32_t)z;
    }
    p.fn->explicit_cluster = hdr.find(".explicitcluster") != std::string::npos;
    return true;
  };

  auto statement = [&](const std::string &st0) -> bool {
    std::string st = trim(st0);
    if (st.empty()) return true;
    p.line_no = cur_line;
    if (!p.fn) {  // module scope
      std::istringstream in(st);
      std::vector<std::string> toks;
      std::string t;
      while (in >> t) toks.push_back(t);
      bool ext = false;
      for (auto &k : toks) {
        if (k == ".visible" || k == ".weak" || k == ".extern") {
          ext |= k == ".extern";
          continue;
        }
        if (k == ".global" || k == ".const" || k == ".shared") {
          Space sp = k == ".global" ? Space::Global : k == ".const" ? Space::Const : Space::Shared;
          std::string rest = st.substr(st.find(k) + k.size());
          return p.declVar(rest, sp, false);
        }
        if (k == ".func" && ext) return true;  // a declaration (no body)
        break;
      }
      if (st.rfind(".pragma", 0) == 0) return true;
      return p.fail("a module-scope statement the emulator does not read: " + st.substr(0, 60));
    }
    // inside a function
    if (st[0] == '.') {
      std::string kw = st.substr(0, st.find_first_of(" \t"));
      if (kw == ".reg") return p.declRegs(st.substr(4));
      if (kw == ".shared") return p.declVar(st.substr(7), Space::Shared, true);
      if (kw == ".local") return p.declVar(st.substr(6), Space::Local, true);
      if (kw == ".param") {
        p.body_param = true;
        bool ok = p.declVar(st.substr(6), Space::Param, true);
        p.body_param = false;
        return ok;
      }
      if (kw == ".global") return p.declVar(st.substr(7), Space::Global, true);
      if (kw == ".pragma") return true;
      return p.fail("a directive the emulator does not read: " + kw);
    }
    return p.instruction(st);
  };

  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
      if (!cur.empty()) cur += ' ';
      continue;
    }
    if (in_section) {  // .section .debug_* { ... }: debug data, skipped
      if (c == '{') ++section_depth;
      if (c == '}' && --section_depth == 0) in_section = false;
      ++i;
      continue;
    }
    if (trim(cur).empty()) {
      cur.clear();
      cur_line = line;
      if (std::isspace((unsigned char)c)) {
        ++i;
        continue;
      }
      // newline-terminated directives
      if (c == '.') {
        size_t e = text.find_first_of(" \t\n", i);
        std::string kw = text.substr(i, e - i);
        if (kw == ".loc" || kw == ".file" || kw == ".version" || kw == ".target" ||
            kw == ".address_size") {
          size_t nl = text.find('\n', i);
          if (nl == std::string::npos) nl = text.size();
          lineDirective(text.substr(i, nl - i));
          i = nl;
          continue;
        }
        if (kw == ".section") {
          in_section = true;
          section_depth = 0;
          i = e;
          continue;
        }
      }
      if (c == '{') {
        if (!p.fn) {
          p.line_no = line;
          *err = "PTX line " + std::to_string(line) + ": a block outside a function";
          return false;
        }
        ++depth;
        p.reg_scopes.emplace_back();
        p.scope_ids.push_back(p.next_scope++);
        ++i;
        continue;
      }
      if (c == '}') {
        if (!p.fn) {
          *err = "PTX line " + std::to_string(line) + ": an unmatched }";
          return false;
        }
        --depth;
        p.reg_scopes.pop_back();
        p.scope_ids.pop_back();
        ++i;
        if (depth == 0 && !finishFunction()) return *err = p.err, false;
        continue;
      }
    }
    if (c == ':' && p.fn) {  // a label ends here when what came before is one identifier
      std::string name = trim(cur);
      // `shared::cta` and `mbarrier::complete_tx` hold colons too: a label is one name
      // without dots, not followed by a second colon.
      bool ident = !name.empty() && name.find_first_of(" \t[]{},.") == std::string::npos &&
                   (i + 1 >= text.size() || text[i + 1] != ':');
      if (ident) {
        p.labels[{p.scope_ids.back(), name}] = (uint32_t)p.fn->code.size();
        cur.clear();
        ++i;
        continue;
      }
    }
    if (c == '{' && !trim(cur).empty()) {
      std::string h = trim(cur);
      if (!p.fn &&
          (h.find(".entry") != std::string::npos || h.find(".func") != std::string::npos)) {
        p.line_no = cur_line;
        if (!startFunction(h)) return *err = p.err, false;
        depth = 1;
        cur.clear();
        ++i;
        continue;
      }
    }
    if (c == ';') {
      if (!statement(cur)) return *err = p.err, false;
      cur.clear();
      ++i;
      continue;
    }
    cur += c;
    ++i;
  }
  if (!trim(cur).empty()) {
    // `.extern .func name(...)` declarations end with `;`; anything left is a truncated file
    *err = "PTX line " + std::to_string(cur_line) + ": the text ends inside a statement";
    return false;
  }
  // file names for every .loc
  for (auto &[n, name] : mod->file_names) mod->file_store.push_back(name);
  std::map<int, const char *> names;
  size_t k = 0;
  for (auto &[n, name] : mod->file_names) names[n] = mod->file_store[k++].c_str();
  for (auto &l : mod->locs)
    if (auto it = names.find(l.file_no); it != names.end()) l.file = it->second;
  return true;
}

}  // namespace wsemu::ptxe
