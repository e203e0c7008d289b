#include "watchdog.h"

#include "edit.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/Stmt.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/ASTUnit.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace wsr {

// =============================================================================================
// docs/methodology.md's guard table: a small expression parser and an algebra of thread axes
// =============================================================================================
namespace {

struct Node {
  enum K { Num, Ident, Call, Unary, Binary } k = Num;
  long long v = 0;
  std::string s;  // identifier / callee / operator
  std::vector<std::shared_ptr<Node>> kids;
};
using NodeP = std::shared_ptr<Node>;

struct Parser {
  std::vector<std::string> toks;
  size_t i = 0;
  explicit Parser(const std::string &t) {
    size_t p = 0;
    while (p < t.size()) {
      char c = t[p];
      if (std::isspace((unsigned char)c)) {
        ++p;
        continue;
      }
      if (std::isalpha((unsigned char)c) || c == '_') {
        size_t q = p;
        while (q < t.size() && (std::isalnum((unsigned char)t[q]) || t[q] == '_')) ++q;
        toks.push_back(t.substr(p, q - p));
        p = q;
        continue;
      }
      if (std::isdigit((unsigned char)c)) {
        size_t q = p;
        while (q < t.size() && (std::isalnum((unsigned char)t[q]) || t[q] == '\'')) ++q;
        toks.push_back(t.substr(p, q - p));
        p = q;
        continue;
      }
      static const char *ops[] = {"::", "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||"};
      bool two = false;
      for (auto o : ops)
        if (t.compare(p, 2, o) == 0) {
          toks.push_back(o);
          p += 2;
          two = true;
          break;
        }
      if (!two) {
        toks.push_back(std::string(1, c));
        ++p;
      }
    }
  }
  const std::string &peek(size_t ahead = 0) const {
    static const std::string end;
    return i + ahead < toks.size() ? toks[i + ahead] : end;
  }
  bool eat(const std::string &t) {
    if (peek() == t) {
      ++i;
      return true;
    }
    return false;
  }
  static bool isIdent(const std::string &t) {
    return !t.empty() && (std::isalpha((unsigned char)t[0]) || t[0] == '_');
  }
  static bool isTypeWord(const std::string &t) {
    static const std::set<std::string> w = {
        "int",     "unsigned", "signed",   "long",    "short",    "char",    "bool",
        "const",   "size_t",   "uint32_t", "int32_t", "uint64_t", "int64_t", "uint16_t",
        "int16_t", "uint8_t",  "int8_t",   "uint",    "volatile", "auto"};
    return w.count(t) || (t.size() > 2 && t.compare(t.size() - 2, 2, "_t") == 0);
  }
  NodeP num(long long v) {
    auto n = std::make_shared<Node>();
    n->k = Node::Num;
    n->v = v;
    return n;
  }
  NodeP primary() {
    const std::string t = peek();
    if (t.empty()) return nullptr;
    if (t == "(") {
      // a cast: ( type words [*] ) operand
      size_t j = i + 1;
      bool cast = isTypeWord(peek(1));
      while (cast && j < toks.size() && toks[j] != ")") {
        if (!(isIdent(toks[j]) || toks[j] == "*" || toks[j] == "::")) cast = false;
        ++j;
      }
      if (cast && j < toks.size()) {
        i = j + 1;
        return unary();
      }
      ++i;
      NodeP e = expr();
      eat(")");
      return e;
    }
    if (std::isdigit((unsigned char)t[0])) {
      ++i;
      std::string d;
      for (char c : t)
        if (c != '\'') d += c;
      while (!d.empty() &&
             (d.back() == 'u' || d.back() == 'U' || d.back() == 'l' || d.back() == 'L'))
        d.pop_back();
      try {
        return num(std::stoll(d, nullptr, 0));
      } catch (...) {
        return num(0);
      }
    }
    if (isIdent(t)) {
      std::string name = t;
      ++i;
      if ((name == "static_cast" || name == "reinterpret_cast") && peek() == "<") {
        int depth = 0;
        while (!peek().empty()) {
          if (peek() == "<") ++depth;
          if (peek() == ">") {
            --depth;
            if (depth == 0) {
              ++i;
              break;
            }
          }
          ++i;
        }
        eat("(");
        NodeP e = expr();
        eat(")");
        return e;
      }
      while ((peek() == "::" || peek() == "." || peek() == "->") && isIdent(peek(1))) {
        name += peek() == "::" ? "::" : ".";
        name += peek(1);
        i += 2;
      }
      if (peek() == "<" && false) {
      }
      if (eat("(")) {
        auto n = std::make_shared<Node>();
        n->k = Node::Call;
        n->s = name;
        while (!peek().empty() && peek() != ")") {
          n->kids.push_back(expr());
          if (!eat(",")) break;
        }
        eat(")");
        return n;
      }
      auto n = std::make_shared<Node>();
      n->k = Node::Ident;
      n->s = name;
      return n;
    }
    ++i;
    return nullptr;
  }
  NodeP unary() {
    const std::string t = peek();
    if (t == "!" || t == "-" || t == "~" || t == "+") {
      ++i;
      auto n = std::make_shared<Node>();
      n->k = Node::Unary;
      n->s = t;
      n->kids.push_back(unary());
      return n;
    }
    return primary();
  }
  static int prec(const std::string &op) {
    static const std::map<std::string, int> p = {
        {"||", 1}, {"&&", 2}, {"|", 3},  {"^", 4},  {"&", 5},  {"==", 6},
        {"!=", 6}, {"<", 7},  {"<=", 7}, {">", 7},  {">=", 7}, {"<<", 8},
        {">>", 8}, {"+", 9},  {"-", 9},  {"*", 10}, {"/", 10}, {"%", 10}};
    auto it = p.find(op);
    return it == p.end() ? -1 : it->second;
  }
  NodeP binary(int minp) {
    NodeP l = unary();
    while (true) {
      std::string op = peek();
      int p = prec(op);
      if (p < minp || p < 0) break;
      ++i;
      NodeP r = binary(p + 1);
      auto n = std::make_shared<Node>();
      n->k = Node::Binary;
      n->s = op;
      n->kids = {l, r};
      l = n;
    }
    return l;
  }
  NodeP expr() { return binary(1); }
};

NodeP parseExpr(const std::string &t) {
  Parser p(t);
  return p.expr();
}

enum class Ax { None, Thread, Warp, Warpgroup, Lane, ThreadInWG, WarpInWG };
struct Axis {
  Ax k = Ax::None;
  long long off = 0;  // the expression is (axis value + off)
};

using VarMap = std::map<std::string, std::string>;  // local variable -> initializer text

std::string lower(std::string s) {
  for (auto &c : s) c = (char)std::tolower((unsigned char)c);
  return s;
}

std::string lastComponent(const std::string &name) {
  size_t p = name.find_last_of(":.");
  return p == std::string::npos ? name : name.substr(p + 1);
}

Axis axisFromName(const std::string &raw) {
  std::string n = lower(lastComponent(raw));
  if (n.find("lane") != std::string::npos) return {Ax::Lane, 0};
  if (n.find("warpgroup") != std::string::npos || n.find("warp_group") != std::string::npos ||
      n == "wg" || n == "wg_id" || n == "wgid" || n == "wg_idx" || n == "wg_index")
    return {Ax::Warpgroup, 0};
  if (n.find("warp") != std::string::npos) return {Ax::Warp, 0};
  return {};
}

std::optional<long long> constOf(const NodeP &n, const VarMap &vars, int depth);

Axis axisOf(const NodeP &n, const VarMap &vars, int depth) {
  if (!n || depth > 8) return {};
  switch (n->k) {
    case Node::Num:
      return {};
    case Node::Ident: {
      if (n->s == "threadIdx.x") return {Ax::Thread, 0};
      if (n->s.rfind("threadIdx.", 0) == 0) return {};
      auto it = vars.find(n->s);
      if (it != vars.end()) return axisOf(parseExpr(it->second), vars, depth + 1);
      return axisFromName(n->s);
    }
    case Node::Call: {
      std::string c = lower(lastComponent(n->s));
      if (c.rfind("__shfl", 0) == 0 && n->kids.size() >= 2)
        return axisOf(n->kids[1], vars, depth + 1);
      if (c.find("elect") != std::string::npos) return {};
      return axisFromName(c);
    }
    case Node::Unary:
      if (n->s == "+") return axisOf(n->kids[0], vars, depth + 1);
      return {};
    case Node::Binary: {
      const std::string &op = n->s;
      auto rc = constOf(n->kids[1], vars, depth + 1);
      auto lc = constOf(n->kids[0], vars, depth + 1);
      if ((op == "+" || op == "-") && rc) {
        Axis a = axisOf(n->kids[0], vars, depth + 1);
        if (a.k != Ax::None) a.off += op == "+" ? *rc : -*rc;
        return a;
      }
      if (op == "+" && lc) {
        Axis a = axisOf(n->kids[1], vars, depth + 1);
        if (a.k != Ax::None) a.off += *lc;
        return a;
      }
      if (!rc) return {};
      Axis a = axisOf(n->kids[0], vars, depth + 1);
      if (a.k == Ax::None || a.off != 0) return {};
      long long c = *rc;
      if (op == ">>") c = 1LL << c;
      if (op == "/" || op == ">>") {
        if (a.k == Ax::Thread && c == 32) return {Ax::Warp, 0};
        if (a.k == Ax::Thread && c == 128) return {Ax::Warpgroup, 0};
        if (a.k == Ax::Warp && c == 4) return {Ax::Warpgroup, 0};
        if (a.k == Ax::ThreadInWG && c == 32) return {Ax::WarpInWG, 0};
        return {};
      }
      if (op == "&") c = c + 1;
      if (op == "%" || op == "&") {
        if (a.k == Ax::Thread && c == 32) return {Ax::Lane, 0};
        if (a.k == Ax::Thread && c == 128) return {Ax::ThreadInWG, 0};
        if (a.k == Ax::Warp && c == 4) return {Ax::WarpInWG, 0};
        if (a.k == Ax::ThreadInWG && c == 32) return {Ax::Lane, 0};
        if (a.k == Ax::Lane && c == 32) return a;
        return {};
      }
      return {};
    }
  }
  return {};
}

std::optional<long long> constOf(const NodeP &n, const VarMap &vars, int depth) {
  if (!n || depth > 8) return std::nullopt;
  if (n->k == Node::Num) return n->v;
  if (n->k == Node::Unary && n->s == "-") {
    auto c = constOf(n->kids[0], vars, depth + 1);
    if (c) return -*c;
  }
  if (n->k == Node::Ident) {
    auto it = vars.find(n->s);
    if (it != vars.end()) return constOf(parseExpr(it->second), vars, depth + 1);
  }
  if (n->k == Node::Binary) {
    auto a = constOf(n->kids[0], vars, depth + 1), b = constOf(n->kids[1], vars, depth + 1);
    if (a && b) {
      const std::string &op = n->s;
      if (op == "+") return *a + *b;
      if (op == "-") return *a - *b;
      if (op == "*") return *a * *b;
      if (op == "/" && *b) return *a / *b;
      if (op == "%" && *b) return *a % *b;
      if (op == "<<") return *a << *b;
      if (op == ">>") return *a >> *b;
    }
  }
  return std::nullopt;
}

std::string axisName(Ax k, long long v) {
  std::string n = std::to_string(v);
  switch (k) {
    case Ax::Thread:
      return "thread " + n;
    case Ax::Warp:
      return "warp " + n;
    case Ax::Warpgroup:
      return "warpgroup " + n;
    case Ax::Lane:
      return "lane " + n;
    case Ax::ThreadInWG:
      return "warpgroup thread " + n;
    case Ax::WarpInWG:
      return "warp " + n + " of its warpgroup";
    default:
      return "";
  }
}
std::string axisKind(Ax k) {
  switch (k) {
    case Ax::Thread:
      return "thread";
    case Ax::Warp:
      return "warp";
    case Ax::Warpgroup:
      return "warpgroup";
    case Ax::Lane:
      return "lane";
    case Ax::ThreadInWG:
      return "warpgroup thread";
    case Ax::WarpInWG:
      return "warp of its warpgroup";
    default:
      return "";
  }
}

std::string negateRole(const std::string &r) {
  if (r.empty()) return r;
  if (r.rfind("not ", 0) == 0 && r.find(',') == std::string::npos &&
      r.find(" or ") == std::string::npos)
    return r.substr(4);
  if (r.find(',') != std::string::npos || r.find(" or ") != std::string::npos)
    return "not (" + r + ")";
  return "not " + r;
}

std::string compareRole(const std::string &op0, Axis a, long long c) {
  std::string op = op0;
  long long v = c - a.off;
  if (op == "==") return axisName(a.k, v);
  if (op == "!=") return "not " + axisName(a.k, v);
  if (op == "<" || op == "<=") {
    long long lim = op == "<" ? v : v + 1;  // axis < lim
    if (a.k == Ax::Thread && lim == 1) return "thread 0";
    if (a.k == Ax::Thread && lim == 32) return "warp 0";
    if (a.k == Ax::Thread && lim == 128) return "warpgroup 0";
    if (a.k == Ax::Lane && lim == 1) return "lane 0";
    if (a.k == Ax::Warp && lim == 1) return "warp 0";
    if (a.k == Ax::Warp && lim == 4) return "warpgroup 0";
    if (lim == 1) return axisName(a.k, 0);
    return axisKind(a.k) + " < " + std::to_string(lim);
  }
  if (op == ">" || op == ">=") {
    long long lo = op == ">" ? v + 1 : v;  // axis >= lo
    if (a.k == Ax::Thread && lo == 128) return "not warpgroup 0";
    if (a.k == Ax::Warp && lo == 4) return "not warpgroup 0";
    if (a.k == Ax::Thread && lo == 32) return "not warp 0";
    if (lo == 1) return "not " + axisName(a.k, 0);
    return axisKind(a.k) + " >= " + std::to_string(lo);
  }
  return "";
}

std::string condRole(const NodeP &n, const VarMap &vars, int depth) {
  if (!n || depth > 8) return "";
  if (n->k == Node::Binary) {
    const std::string &op = n->s;
    if (op == "&&" || op == "||") {
      std::string a = condRole(n->kids[0], vars, depth + 1),
                  b = condRole(n->kids[1], vars, depth + 1);
      if (a.empty()) return b;
      if (b.empty()) return a;
      return a + (op == "&&" ? ", " : " or ") + b;
    }
    if (op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=") {
      Axis l = axisOf(n->kids[0], vars, depth + 1), r = axisOf(n->kids[1], vars, depth + 1);
      auto lc = constOf(n->kids[0], vars, depth + 1), rc = constOf(n->kids[1], vars, depth + 1);
      if (l.k != Ax::None && rc) return compareRole(op, l, *rc);
      if (r.k != Ax::None && lc) {
        static const std::map<std::string, std::string> mirror = {
            {"==", "=="}, {"!=", "!="}, {"<", ">"}, {"<=", ">="}, {">", "<"}, {">=", "<="}};
        return compareRole(mirror.at(op), r, *lc);
      }
      if (l.k != Ax::None || r.k != Ax::None) {  // compared with something not constant
        Axis a = l.k != Ax::None ? l : r;
        return axisKind(a.k) + " " + op + " ?";
      }
      return "";
    }
    return "";
  }
  if (n->k == Node::Unary && n->s == "!") {
    const NodeP &k = n->kids[0];
    Axis a = axisOf(k, vars, depth + 1);
    if (a.k != Ax::None) return axisName(a.k, -a.off);  // !lane -> lane 0
    return negateRole(condRole(k, vars, depth + 1));
  }
  if (n->k == Node::Call) {
    std::string c = lower(lastComponent(n->s));
    if (c.find("elect") != std::string::npos) return "elected lane";
    return "";
  }
  if (n->k == Node::Ident) {
    auto it = vars.find(n->s);
    if (it != vars.end()) return condRole(parseExpr(it->second), vars, depth + 1);
  }
  return "";
}

}  // namespace

std::string roleFromGuardText(const std::string &cond) { return condRole(parseExpr(cond), {}, 0); }

// =============================================================================================
// The rewrite
// =============================================================================================
namespace {

struct Ins {
  unsigned off = 0, len = 0;  // len > 0: a replacement
  std::string text;
  unsigned seq = 0;
};

// bar.sync / barrier.sync / bar.red / barrier.cta.sync (not bar.arrive: it does not block).
bool isCtaBarrierAsm(const std::string &t) {
  static const std::regex re(R"((^|[\s;{}])(bar|barrier)(\.cta)?\.(sync|red)\b)");
  return std::regex_search(t, re);
}

// A counted named barrier written as one asm instruction: "bar.sync %0, %1;", "barrier.sync.aligned
// 1, 256;", "bar.arrive %0, %1;". Its operands as tokens ("%0", "1"); nothing for any other asm
// (several instructions, no count, bar.red).
struct NamedBarrierAsm {
  bool wait = true;  // sync; false for arrive
  std::string id, count;
};
std::optional<NamedBarrierAsm> namedBarrierAsm(const std::string &t) {
  static const std::regex re(
      R"(^\s*(bar|barrier)(\.cta)?\.(sync|arrive)(\.aligned)?\s+(%\d+|\d+)\s*,\s*(%\d+|\d+)\s*;?\s*$)");
  std::smatch m;
  if (!std::regex_match(t, m, re)) return std::nullopt;
  return NamedBarrierAsm{m[3] == "sync", m[5], m[6]};
}

// The mbarrier operations of an asm template that change a barrier's state, for the copy's
// shadow (wswatch_rt.cuh, WSWATCH_SHADOW): what each does and its operands as tokens ("%1", "1").
// `unsupported` names the first one the shadow cannot follow: a predicated one (it may run on
// one lane of the 32 that execute the statement), a remote or multicast one (another CTA's
// barrier), arrive_drop and the like (they change the count), an address that is not a plain
// operand.
struct ShadowOp {
  enum K { Init, Arrive, Expect, Copy } k;
  std::string addr, n;  // n: init count, arrive count, expect_tx bytes ("" for a copy)
  bool shared = false;  // the address is a shared-window address (.shared in the opcode)
};
struct ShadowOps {
  std::vector<ShadowOp> ops;
  std::string unsupported;
};
ShadowOps shadowOps(const std::string &t) {
  ShadowOps r;
  std::vector<std::string> insns;
  std::string cur;
  for (char c : t) {  // a { } block's braces stay with its first and last instructions
    if (c == ';' || c == '\n') {
      insns.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  insns.push_back(cur);
  static const std::regex ws(R"(^[\s{}]+|[\s{}]+$)");
  static const std::regex blanks(R"(^\s+|\s+$)");
  static const std::regex tok(R"(^(%\d+|\d+)$)");
  auto operands = [](const std::string &ops) {
    std::vector<std::string> parts;
    std::string c;
    int depth = 0;
    for (char ch : ops) {
      if (ch == '[' || ch == '{') ++depth;
      if (ch == ']' || ch == '}') --depth;
      if (ch == ',' && depth == 0) {
        parts.push_back(std::regex_replace(c, blanks, ""));
        c.clear();
        continue;
      }
      c += ch;
    }
    parts.push_back(std::regex_replace(c, blanks, ""));
    return parts;
  };
  auto addrOf = [&](const std::string &op, std::string *out) {
    std::smatch m;
    static const std::regex br(R"(^\[\s*(%\d+)\s*\]$)");
    if (!std::regex_match(op, m, br)) return false;
    *out = m[1];
    return true;
  };
  for (auto &raw : insns) {
    std::string in = std::regex_replace(raw, ws, "");
    if (in.empty()) continue;
    bool mb = in.find("mbarrier") != std::string::npos;
    if (!mb) continue;
    if (in.find("try_wait") != std::string::npos || in.find("test_wait") != std::string::npos ||
        in.find("pending_count") != std::string::npos ||
        in.find("mbarrier.inval") != std::string::npos)
      continue;  // these read or end a barrier; none of them arrives
    if (in[0] == '@') {
      r.unsupported = "a predicated mbarrier operation: " + in;
      return r;
    }
    size_t sp = in.find_first_of(" \t");
    std::string opc = in.substr(0, sp);
    auto ops = operands(sp == std::string::npos ? "" : in.substr(sp + 1));
    bool shared = opc.find(".shared") != std::string::npos;
    if (opc.find("multicast") != std::string::npos ||
        opc.find("arrive_drop") != std::string::npos ||
        opc.find("noComplete") != std::string::npos || opc.find(".noinc") != std::string::npos ||
        opc.rfind("mbarrier.complete_tx", 0) == 0 ||
        (opc.find("shared::cluster") != std::string::npos && opc.rfind("mbarrier.", 0) == 0)) {
      r.unsupported = "an mbarrier operation the shadow cannot follow: " + opc;
      return r;
    }
    ShadowOp o;
    o.shared = shared;
    bool ok = false;
    if (opc.rfind("mbarrier.init", 0) == 0 && ops.size() == 2) {
      o.k = ShadowOp::Init;
      o.n = ops[1];
      ok = addrOf(ops[0], &o.addr);
    } else if (opc.rfind("mbarrier.arrive.expect_tx", 0) == 0 && ops.size() == 3) {
      ok = addrOf(ops[1], &o.addr);
      ShadowOp a = o;
      a.k = ShadowOp::Arrive;
      a.n = "1";
      o.k = ShadowOp::Expect;
      o.n = ops[2];
      if (ok) r.ops.push_back(a);
    } else if (opc.rfind("mbarrier.arrive", 0) == 0 && (ops.size() == 2 || ops.size() == 3)) {
      o.k = ShadowOp::Arrive;
      o.n = ops.size() == 3 ? ops[2] : "1";
      ok = addrOf(ops[1], &o.addr);
    } else if (opc.rfind("mbarrier.expect_tx", 0) == 0 && ops.size() == 2) {
      o.k = ShadowOp::Expect;
      o.n = ops[1];
      ok = addrOf(ops[0], &o.addr);
    } else if (opc.rfind("cp.async.mbarrier.arrive", 0) == 0 && ops.size() == 1) {
      o.k = ShadowOp::Arrive;
      o.n = "1";
      ok = addrOf(ops[0], &o.addr);
    } else if (opc.rfind("cp.async.bulk", 0) == 0 &&
               opc.find("mbarrier::complete_tx") != std::string::npos) {
      o.k = ShadowOp::Copy;
      o.shared = true;  // the barrier operand of a bulk copy is in the shared window
      size_t at = opc.find(".tensor") != std::string::npos ? 2 : 3;
      ok = ops.size() > at && addrOf(ops[at], &o.addr);
    } else if (opc.rfind("tcgen05.commit", 0) == 0 &&
               opc.find("mbarrier::arrive::one") != std::string::npos && ops.size() == 1) {
      o.k = ShadowOp::Arrive;
      o.n = "1";
      ok = addrOf(ops[0], &o.addr);
    } else {
      continue;  // no state change the shadow counts (a fence, a wait)
    }
    if (ok && !o.n.empty() && !std::regex_match(o.n, tok)) ok = false;
    if (!ok) {
      r.unsupported = "an mbarrier operand the shadow cannot read: " + in;
      return r;
    }
    r.ops.push_back(o);
  }
  return r;
}

// Whether an asm template (anywhere in the program) changes an mbarrier's state.
bool changesMbarrier(const std::string &t) {
  for (const char *w : {"mbarrier.init", "mbarrier.arrive", "mbarrier.expect_tx", "complete_tx",
                        "mbarrier::arrive", "arrive_drop"})
    if (t.find(w) != std::string::npos) return true;
  return false;
}

bool isWaitAsm(const std::string &t) {
  return t.find("mbarrier.try_wait") != std::string::npos ||
         t.find("mbarrier.test_wait") != std::string::npos;
}

std::string cEscape(const std::string &s) {
  std::string o;
  for (char c : s) {
    if (c == '\\' || c == '"') {
      o += '\\';
      o += c;
    } else if (c == '\n')
      o += "\\n";
    else if (c == '\t')
      o += "\\t";
    else if ((unsigned char)c < 32)
      o += ' ';
    else
      o += c;
  }
  return o;
}
std::string cField(const std::string &s, size_t cap) {  // a literal for a char[cap] field
  return cEscape(s.size() >= cap ? s.substr(0, cap - 1) : s);
}

std::string oneLine(std::string s) {
  for (auto &c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  std::string o;
  for (char c : s)
    if (!(c == ' ' && !o.empty() && o.back() == ' ')) o += c;
  return o;
}

// The operands of the try_wait/test_wait instruction in an asm template: the address operand
// number ([%N]) and the parity operand (a number, or an immediate), or nothing.
struct WaitOperands {
  int addr = -1;    // asm operand index of the address
  int parity = -1;  // asm operand index of the parity
  long long parity_imm = -1;
  bool parity_form = false;
  bool shared_space = false;  // .shared{::cta} (else generic)
};
WaitOperands waitOperands(const std::string &t) {
  WaitOperands w;
  size_t p = t.find("mbarrier.try_wait");
  if (p == std::string::npos) p = t.find("mbarrier.test_wait");
  if (p == std::string::npos) return w;
  size_t sp = t.find_first_of(" \t", p);
  std::string opcode = t.substr(p, sp - p);
  w.parity_form = opcode.find(".parity") != std::string::npos;
  w.shared_space = opcode.find(".shared") != std::string::npos;
  size_t semi = t.find(';', p);
  std::string ops = t.substr(sp, semi == std::string::npos ? std::string::npos : semi - sp);
  std::vector<std::string> parts;
  std::string cur;
  int br = 0;
  for (char c : ops) {
    if (c == '[') ++br;
    if (c == ']') --br;
    if (c == ',' && br == 0) {
      parts.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  parts.push_back(cur);
  static const std::regex opnd(R"(%(\d+))");
  std::smatch m;
  if (parts.size() >= 2 && std::regex_search(parts[1], m, opnd)) w.addr = std::stoi(m[1]);
  if (parts.size() >= 3) {
    std::string q = oneLine(parts[2]);
    if (std::regex_search(q, m, opnd))
      w.parity = std::stoi(m[1]);
    else {
      try {
        w.parity_imm = std::stoll(q);
      } catch (...) {
      }
    }
  }
  return w;
}

// A backward branch loop inside the template: a label before the wait and, after it, a
// predicated `@p bra LABEL;` or (CUTLASS's ClusterBarrier::wait: `@P1 bra DONE; bra LAB_WAIT;`)
// an unpredicated one. Returns the [begin, end) of that branch instruction and its predicate.
struct AsmLoop {
  size_t begin = 0, end = 0;
  std::string pred;  // "!p" or "p"; empty: the branch always goes back
  std::string label;
};
std::optional<AsmLoop> asmLoop(const std::string &t) {
  size_t w = t.find("mbarrier.try_wait");
  if (w == std::string::npos) w = t.find("mbarrier.test_wait");
  if (w == std::string::npos) return std::nullopt;
  static const std::regex label(R"((^|[\s;{}])([A-Za-z_$][\w$]*)\s*:(?!:))");
  std::set<std::string> labels;
  for (std::sregex_iterator it(t.begin(), t.begin() + w, label), e; it != e; ++it)
    labels.insert((*it)[2]);
  static const std::regex bra(R"(@(!?)\s*([%\w$]+)\s+bra(\.uni)?\s+([A-Za-z_$][\w$]*)\s*;)");
  for (std::sregex_iterator it(t.begin() + w, t.end(), bra), e; it != e; ++it) {
    if (!labels.count((*it)[4])) continue;
    AsmLoop l;
    l.begin = (size_t)(it->position(0)) + w;
    l.end = l.begin + (size_t)it->length(0);
    l.pred = std::string((*it)[1]) + std::string((*it)[2]);
    l.label = (*it)[4];
    return l;
  }
  static const std::regex always(R"((^|[\s;{}])bra(\.uni)?\s+([A-Za-z_$][\w$]*)\s*;)");
  for (std::sregex_iterator it(t.begin() + w, t.end(), always), e; it != e; ++it) {
    if (!labels.count((*it)[3])) continue;
    const size_t at = (size_t)it->position(0) + w + (size_t)(*it)[1].length();
    size_t before = t.find_last_not_of(" \t\n", at == 0 ? 0 : at - 1);
    if (at > 0 && before != std::string::npos) {  // `@p bra`: the predicated form's, not this
      size_t tok = t.find_last_of(" \t\n;{}", before);
      if (t[tok == std::string::npos ? 0 : tok + 1] == '@') continue;
    }
    AsmLoop l;
    l.begin = at;
    l.end = (size_t)(it->position(0) + it->length(0)) + w;
    l.label = (*it)[3];
    return l;
  }
  return std::nullopt;
}

// %N -> %(N+1) for N >= from; %% and %[name] untouched.
std::string renumber(const std::string &t, int from) {
  std::string o;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '%' && i + 1 < t.size() && t[i + 1] == '%') {
      o += "%%";
      ++i;
      continue;
    }
    if (t[i] == '%' && i + 1 < t.size() && std::isdigit((unsigned char)t[i + 1])) {
      size_t j = i + 1;
      while (j < t.size() && std::isdigit((unsigned char)t[j])) ++j;
      int n = std::stoi(t.substr(i + 1, j - i - 1));
      o += "%" + std::to_string(n >= from ? n + 1 : n);
      i = j - 1;
      continue;
    }
    o += t[i];
  }
  return o;
}

std::string roleWordIn(const std::string &text) {
  static const char *words[] = {"producer", "consumer",   "epilogue", "mma",    "scheduler",
                                "softmax",  "correction", "loader",   "storer", "math"};
  std::string l = lower(text);
  // only comments count
  std::string comments;
  for (size_t p = l.find("//"); p != std::string::npos; p = l.find("//", p + 2)) {
    size_t e = l.find('\n', p);
    comments += l.substr(p, e == std::string::npos ? std::string::npos : e - p) + "\n";
  }
  size_t best = std::string::npos;
  std::string word;
  for (auto w : words) {
    size_t q = comments.find(w);
    if (q != std::string::npos && q < best) {
      best = q;
      word = w;
    }
  }
  return word;
}

class Rewriter {
 public:
  // `path` is the file being built (its name goes into #line and the site table): a parse lent by
  // the reducer's check names the original instead.
  Rewriter(const ParsedSource &src, std::string path, const WatchOptions &opt)
      : src_(src), path_(std::move(path)), opt_(opt) {}

  WatchResult run() {
    WatchResult res;
    const ParsedSide *dev = nullptr, *host = nullptr;
    for (auto &s : src_.sides) {
      if (s.device)
        dev = &s;
      else
        host = &s;
    }
    if (!dev) dev = host;  // a .cpp: nothing to bound, but the runtime still goes in
    if (!dev || !dev->ast) {
      res.error = "no AST";
      return res;
    }
    ctx_ = &dev->ast->getASTContext();
    collect();
    plan();
    // launches and resets: host side (the device parse sees host code too; dedupe by offset)
    for (auto *side : {host, dev})
      if (side && side->ast) hostHooks(side->ast->getASTContext());
    res.sites = sites_;
    res.shadow = shadow_;
    res.shadow_off = shadow_off_;
    res.warnings = warnings_;
    res.text = assemble();
    res.ok = true;
    return res;
  }

 private:
  const ParsedSource &src_;
  std::string path_;
  const WatchOptions &opt_;
  clang::ASTContext *ctx_ = nullptr;
  std::vector<Ins> ins_;
  unsigned seq_ = 0;
  std::vector<WatchSite> sites_;
  std::vector<std::string> warnings_;
  std::set<unsigned> hook_offsets_;

  // --- what collect() finds -------------------------------------------------------------
  struct Prim {  // one wait primitive
    enum K { Asm, AsmLoop, CallTry, Barrier } k;
    const clang::Stmt *stmt = nullptr;  // the asm statement or the call expression
    const clang::FunctionDecl *fn = nullptr;
    const clang::Stmt *loop = nullptr;  // the enclosing C++ loop (Asm, CallTry)
  };
  std::vector<Prim> prims_;
  std::set<const clang::FunctionDecl *>
      try_helpers_;  // a user function that is one single-shot try
  std::map<const clang::FunctionDecl *, unsigned> helpers_;  // helper -> its default site id
  std::map<const clang::FunctionDecl *, int> helper_bar_param_;
  std::map<const clang::FunctionDecl *, std::vector<unsigned>>
      kernel_slots_;  // kernel -> site ids by slot

  // ---- small utilities -------------------------------------------------------------------
  void add(unsigned off, unsigned len, std::string text) {
    ins_.push_back({off, len, std::move(text), seq_++});
  }
  std::optional<Range> range(const clang::Stmt *s) {
    return mainFileRange(*ctx_, s->getSourceRange());
  }
  std::optional<Range> rangeSemi(const clang::Stmt *s) {
    return mainFileRangeWithSemi(*ctx_, s->getSourceRange());
  }
  std::string textOf(const clang::Stmt *s) {
    auto r = range(s);
    return r ? src_.text.substr(r->begin, r->size()) : std::string();
  }
  unsigned lineAt(unsigned off) { return lineOf(src_.text, off); }
  unsigned lineOfStmt(const clang::Stmt *s) {
    auto &sm = ctx_->getSourceManager();
    return sm.getExpansionLineNumber(s->getBeginLoc());
  }

  const clang::Stmt *parentStmt(const clang::Stmt *s) {
    for (auto &p : ctx_->getParents(*s))
      if (auto *ps = p.get<clang::Stmt>()) return ps;
    return nullptr;
  }
  const clang::FunctionDecl *enclosingFunction(const clang::Stmt *s) {
    clang::DynTypedNode n = clang::DynTypedNode::create(*s);
    for (int guard = 0; guard < 200; ++guard) {
      auto ps = ctx_->getParents(n);
      if (ps.empty()) return nullptr;
      n = ps[0];
      if (auto *fd = n.get<clang::FunctionDecl>()) return fd;
      if (n.get<clang::LambdaExpr>()) return nullptr;
    }
    return nullptr;
  }
  static bool isLoop(const clang::Stmt *s) {
    return llvm::isa<clang::WhileStmt>(s) || llvm::isa<clang::DoStmt>(s) ||
           llvm::isa<clang::ForStmt>(s);
  }
  const clang::Stmt *enclosingLoop(const clang::Stmt *s) {
    for (const clang::Stmt *p = parentStmt(s); p; p = parentStmt(p))
      if (isLoop(p)) return p;
    return nullptr;
  }
  static bool isKernel(const clang::FunctionDecl *f) {
    return f && f->hasAttr<clang::CUDAGlobalAttr>();
  }
  bool inMainFile(clang::SourceLocation l) {
    auto &sm = ctx_->getSourceManager();
    return sm.isInMainFile(sm.getExpansionLoc(l));
  }

  // ---- finding the waits -------------------------------------------------------------------
  struct Finder : clang::RecursiveASTVisitor<Finder> {
    Rewriter &rw;
    std::vector<const clang::GCCAsmStmt *> asms;
    std::vector<const clang::CallExpr *> calls;
    explicit Finder(Rewriter &r) : rw(r) {}
    std::vector<const clang::GCCAsmStmt *>
        bar_asms;  // bar.sync / barrier.sync without a count: bracketed, not bounded
    std::vector<const clang::GCCAsmStmt *> named_asms;  // counted: a bounded software barrier
    std::vector<const clang::GCCAsmStmt *> state_asms;  // change an mbarrier (the shadow's)
    std::vector<const clang::GCCAsmStmt *> outside_state_asms;  // the same, in headers
    bool VisitGCCAsmStmt(clang::GCCAsmStmt *a) {
      std::string t = a->getAsmString();
      if (changesMbarrier(t))
        (rw.inMainFile(a->getBeginLoc()) ? state_asms : outside_state_asms).push_back(a);
      if (!rw.inMainFile(a->getBeginLoc())) return true;
      if (isWaitAsm(t))
        asms.push_back(a);
      else if (namedBarrierAsm(t))
        named_asms.push_back(a);
      else if (isCtaBarrierAsm(t))
        bar_asms.push_back(a);
      return true;
    }
    bool VisitCallExpr(clang::CallExpr *c) {
      if (rw.inMainFile(c->getBeginLoc())) calls.push_back(c);
      return true;
    }
  };
  std::vector<const clang::CallExpr *> calls_;

  static std::string calleeName(const clang::CallExpr *c) {
    if (auto *f = c->getDirectCallee()) return f->getQualifiedNameAsString();
    return "";
  }
  const clang::FunctionDecl *calleeDef(const clang::CallExpr *c) {
    auto *f = c->getDirectCallee();
    if (!f) return nullptr;
    if (auto *pat = f->getTemplateInstantiationPattern()) f = pat;
    const clang::FunctionDecl *def = nullptr;
    if (f->hasBody(def)) return def;
    return f;
  }

  // CTA barriers cannot be bounded: each one is bracketed by __wsw_bar_enter(line) /
  // __wsw_bar_leave() so that a warp still inside one at the end is seen (hang/barrier). The asm
  // statements get the calls around them; a __syncthreads() call becomes a comma expression.
  void bracketBarriers(const Finder &fd) {
    for (auto *a : fd.bar_asms) {
      auto r = rangeSemi(a);
      if (!r) continue;
      std::string enter = "__wsw_bar_enter(" + std::to_string(lineOfStmt(a)) + "u);";
      const clang::Stmt *p = parentStmt(a);
      if (p && llvm::isa<clang::CompoundStmt>(p)) {
        add(r->begin, 0, enter + " ");
        add(r->end, 0, " __wsw_bar_leave();");
      } else {
        add(r->begin, 0, "{ " + enter + " ");
        add(r->end, 0, " __wsw_bar_leave(); }");
      }
      ++bar_sites_;
    }
    for (auto *c : fd.calls) {
      auto *f = c->getDirectCallee();
      if (!f || f->getName() != "__syncthreads" || c->getNumArgs() != 0) continue;
      auto *fn = enclosingFunction(c);
      if (!fn || !(fn->hasAttr<clang::CUDAGlobalAttr>() || fn->hasAttr<clang::CUDADeviceAttr>()))
        continue;
      auto r = range(c);
      if (!r) continue;
      if (!bar_calls_.insert(r->begin).second) continue;
      add(r->begin, 0, "(__wsw_bar_enter(" + std::to_string(lineOfStmt(c)) + "u), ");
      add(r->end, 0, ", __wsw_bar_leave())");
      ++bar_sites_;
    }
  }
  unsigned bar_sites_ = 0;
  std::set<unsigned> bar_calls_;
  std::vector<const clang::GCCAsmStmt *> named_asms_;

  // Each counted named barrier becomes __wsw_nbar(id, count, wait, site, counter, line) (the
  // runtime's software barrier, oracle/include/wswatch_rt.cuh); a sync is a bounded wait site
  // like an mbarrier wait (in a helper, each call of the helper is its own site), an arrive only
  // counts. Every kernel of the file then zeroes the barriers' state at its entry.
  void planNamedBarriers() {
    for (auto *a : named_asms_) {
      auto nb = namedBarrierAsm(a->getAsmString());
      auto r = range(a);
      if (!nb || !r) continue;
      unsigned nout = a->getNumOutputs(), nin = a->getNumInputs();
      auto operand = [&](const std::string &tok) -> std::string {
        if (tok[0] != '%') return tok + "u";
        unsigned n = (unsigned)std::stoul(tok.substr(1));
        if (n < nout || n >= nout + nin) return "";
        return "(unsigned)(" + oneLine(textOf(a->getInputExpr(n - nout))) + ")";
      };
      std::string id = operand(nb->id), count = operand(nb->count);
      if (id.empty() || count.empty()) continue;
      unsigned line = lineOfStmt(a);
      std::string site = "0xffffffffu", it = "(unsigned *)nullptr";
      if (nb->wait) {
        auto c = ctxFor(enclosingFunction(a), a, "named", line,
                        nb->id[0] == '%' ? "named" : "named " + nb->id, "");
        if (!c) continue;
        site = c->site;
        it = c->it;
      }
      std::string old = src_.text.substr(r->begin, r->size());
      std::string rep = "__wsw_nbar(" + id + ", " + count + ", " + (nb->wait ? "1" : "0") + ", " +
                        site + ", " + it + ", " + std::to_string(line) + "u)";
      rep += std::string(std::count(old.begin(), old.end(), '\n'), '\n');  // lines stay
      add(r->begin, r->size(), rep);
      ++named_sites_;
    }
  }
  // Every kernel zeroes the named barriers' and the shadow's state at its entry.
  void planKernelInit() {
    if (named_sites_ == 0 && !shadow_) return;
    struct K : clang::RecursiveASTVisitor<K> {
      Rewriter &rw;
      explicit K(Rewriter &r) : rw(r) {}
      bool VisitFunctionDecl(clang::FunctionDecl *f) {
        if (!isKernel(f) || !f->doesThisDeclarationHaveABody()) return true;
        auto *body = llvm::dyn_cast<clang::CompoundStmt>(f->getBody());
        if (!body) return true;
        if (auto lb = mainFileOffset(*rw.ctx_, body->getLBracLoc()))
          rw.add(*lb + 1, 0, " __wsw_kernel_init();");
        return true;
      }
    } k(*this);
    k.TraverseDecl(ctx_->getTranslationUnitDecl());
  }
  unsigned named_sites_ = 0;

  // ---- the mbarrier shadow -----------------------------------------------------------------
  std::vector<const clang::GCCAsmStmt *> state_asms_;
  std::string shadow_off_;  // why the copy has no shadow ("" when it has one)
  bool shadow_ = false;

  // Whether a function's body runs in the program: referenced, or a template with an
  // instantiation that is.
  static bool usedFunction(const clang::FunctionDecl *f) {
    if (!f) return true;  // a lambda or a global initializer: assume so
    if (f->isReferenced() || f->isUsed() || isKernel(f) || f->isMain()) return true;
    if (auto *t = f->getDescribedFunctionTemplate())
      for (auto *spec : t->specializations())
        if (spec->isReferenced() || spec->isUsed()) return true;
    if (auto *m = llvm::dyn_cast<clang::CXXMethodDecl>(f))
      if (auto *rec = m->getParent(); rec && rec->getDescribedClassTemplate()) return true;
    return false;
  }

  // The shadow follows every state change of every mbarrier or none: an arrival it cannot see
  // (a header's asm, a library call, a predicated or remote one) would make its counts lie.
  void shadowWhyNot(const Finder &fd) {
    for (auto *a : fd.outside_state_asms)
      if (usedFunction(enclosingFunction(a))) {
        auto &sm = ctx_->getSourceManager();
        shadow_off_ = "an mbarrier operation outside the file, in " +
                      sm.getFilename(sm.getExpansionLoc(a->getBeginLoc())).str();
        return;
      }
    for (auto *c : fd.calls) {
      auto *def = calleeDef(c);
      if (def && inMainFile(def->getBeginLoc())) continue;  // its asm is seen in the file
      std::string n = calleeName(c);
      for (const char *w : {"mbarrier_init", "mbarrier_arrive", "mbarrier_expect_tx",
                            "cp_async_bulk", "barrier_arrive_tx", "tcgen05_commit"})
        if (n.find(w) != std::string::npos) {
          shadow_off_ = "a library call that changes an mbarrier: " + n;
          return;
        }
      if (auto *mc = llvm::dyn_cast<clang::CXXMemberCallExpr>(c))
        if (auto *rec = mc->getRecordDecl()) {
          std::string rn = rec->getQualifiedNameAsString();
          if (rn.find("cuda::") != std::string::npos && rn.find("barrier") != std::string::npos) {
            shadow_off_ = "a libcu++ barrier (" + rn + ")";
            return;
          }
        }
    }
    if (fd.state_asms.empty()) {
      shadow_off_ = "no mbarrier operation in the file";
      return;
    }
    for (auto *a : fd.state_asms) {
      auto ops = shadowOps(a->getAsmString());
      if (!ops.unsupported.empty()) {
        shadow_off_ = "line " + std::to_string(lineOfStmt(a)) + ": " + ops.unsupported;
        return;
      }
      unsigned nout = a->getNumOutputs(), nin = a->getNumInputs();
      for (auto &o : ops.ops)
        for (const std::string *t : {&o.addr, &o.n}) {
          if (t->empty() || (*t)[0] != '%') continue;
          unsigned k = (unsigned)std::stoul(t->substr(1));
          if (k < nout || k >= nout + nin ||
              a->getInputExpr(k - nout)->HasSideEffects(*ctx_, /*possible effects*/ false)) {
            shadow_off_ = "line " + std::to_string(lineOfStmt(a)) +
                          ": an mbarrier operand the shadow cannot evaluate twice";
            return;
          }
        }
    }
    shadow_ = true;
  }

  // Before each asm statement that changes an mbarrier: the same change, in the shadow.
  void planShadow() {
    if (!shadow_) return;
    for (auto *a : state_asms_) {
      auto ops = shadowOps(a->getAsmString());
      unsigned nout = a->getNumOutputs();
      auto expr = [&](const std::string &t) {
        if (t[0] != '%') return t + "u";
        unsigned k = (unsigned)std::stoul(t.substr(1));
        return "(" + oneLine(textOf(a->getInputExpr(k - nout))) + ")";
      };
      std::string pre;
      for (auto &o : ops.ops) {
        std::string addr = "(unsigned long long)" + expr(o.addr) + ", " + (o.shared ? "1" : "0");
        switch (o.k) {
          case ShadowOp::Init:
            pre += "__wsw_sh_init(" + addr + ", (unsigned)" + expr(o.n) + "); ";
            break;
          case ShadowOp::Arrive:
            pre += "__wsw_sh_arrive(" + addr + ", (unsigned)" + expr(o.n) + "); ";
            break;
          case ShadowOp::Expect:
            pre += "__wsw_sh_expect(" + addr + ", (unsigned)" + expr(o.n) + "); ";
            break;
          case ShadowOp::Copy:
            pre += "__wsw_sh_copy(" + addr + "); ";
            break;
        }
      }
      if (!pre.empty()) {
        pre.pop_back();
        beforeStmt(a, pre);
      }
    }
  }

  void collect() {
    Finder fd(*this);
    fd.TraverseDecl(ctx_->getTranslationUnitDecl());
    bracketBarriers(fd);
    named_asms_ = fd.named_asms;
    state_asms_ = fd.state_asms;
    shadowWhyNot(fd);
    calls_ = fd.calls;
    // single-shot try helpers: a user function with a wait asm that is not inside a loop
    for (auto *a : fd.asms) {
      auto *fn = enclosingFunction(a);
      std::string t = a->getAsmString();
      if (asmLoop(t)) {
        prims_.push_back({Prim::AsmLoop, a, fn, nullptr});
        continue;
      }
      const clang::Stmt *loop = enclosingLoop(a);
      if (loop) {
        prims_.push_back({Prim::Asm, a, fn, loop});
        continue;
      }
      if (fn) try_helpers_.insert(fn->getCanonicalDecl());
    }
    for (auto *c : fd.calls) {
      std::string n = calleeName(c);
      std::string last = lastComponent(n);
      auto *def = calleeDef(c);
      bool ptx_try = n.find("ptx::mbarrier_try_wait") != std::string::npos ||
                     n.find("ptx::mbarrier_test_wait") != std::string::npos;
      bool user_try = def && try_helpers_.count(def->getCanonicalDecl());
      if (ptx_try || user_try) {
        const clang::Stmt *loop = enclosingLoop(c);
        if (loop)
          prims_.push_back({Prim::CallTry, c, enclosingFunction(c), loop});
        else
          warnings_.push_back("line " + std::to_string(lineOfStmt(c)) + ": a single " + last +
                              " outside any loop: not a blocking wait, left alone");
        continue;
      }
      if (auto *mc = llvm::dyn_cast<clang::CXXMemberCallExpr>(c)) {
        if (last != "wait" && last != "wait_parity" && last != "arrive_and_wait") continue;
        auto *rec = mc->getRecordDecl();
        if (!rec) continue;
        std::string rn = rec->getQualifiedNameAsString();
        if (rn.find("barrier") == std::string::npos || rn.find("cuda::") == std::string::npos)
          continue;
        prims_.push_back({Prim::Barrier, c, enclosingFunction(c), nullptr});
      }
    }
  }

  // ---- roles --------------------------------------------------------------------------------
  VarMap varsOf(const clang::FunctionDecl *fn) {
    VarMap m;
    if (!fn || !fn->hasBody()) return m;
    struct V : clang::RecursiveASTVisitor<V> {
      Rewriter &rw;
      VarMap &m;
      V(Rewriter &r, VarMap &mm) : rw(r), m(mm) {}
      bool VisitVarDecl(clang::VarDecl *d) {
        if (d->hasInit() && !llvm::isa<clang::ParmVarDecl>(d)) {
          auto r = mainFileRange(*rw.ctx_, d->getInit()->getSourceRange());
          if (r) m[d->getNameAsString()] = rw.src_.text.substr(r->begin, r->size());
        }
        return true;
      }
    } v(*this, m);
    v.TraverseStmt(fn->getBody());
    return m;
  }

  // The chain of role guards around `s` inside its function, outermost first.
  void roleOf(const clang::Stmt *s, WatchSite &site) {
    auto *fn = enclosingFunction(s);
    VarMap vars = varsOf(fn);
    std::vector<std::string> roles, guards;
    std::string word;
    const clang::Stmt *child = s;
    for (const clang::Stmt *p = parentStmt(s); p; child = p, p = parentStmt(p)) {
      if (auto *ifs = llvm::dyn_cast<clang::IfStmt>(p)) {
        if (child == ifs->getCond() || !ifs->getCond()) continue;
        std::string cond = oneLine(textOf(ifs->getCond()));
        std::string r = condRole(parseExpr(cond), vars, 0);
        bool in_else = child == ifs->getElse();
        if (r.empty()) continue;
        roles.push_back(in_else ? negateRole(r) : r);
        guards.push_back(in_else ? "!(" + cond + ")" : cond);
        if (word.empty()) {  // comments at the guard: the line above, the first lines of the arm
          auto ir = range(ifs);
          const clang::Stmt *arm = in_else ? ifs->getElse() : ifs->getThen();
          auto ar = range(arm);
          std::string around;
          if (ir && !in_else) {
            size_t ls = src_.text.rfind('\n', ir->begin ? ir->begin - 1 : 0);
            size_t ps = ls == std::string::npos || ls == 0 ? 0 : src_.text.rfind('\n', ls - 1);
            ps = ps == std::string::npos ? 0 : ps;
            around += src_.text.substr(ps, ir->begin - ps);
          }
          if (ar) {
            size_t e = ar->begin;
            for (int n = 0; n < 3 && e != std::string::npos; ++n) e = src_.text.find('\n', e + 1);
            around += src_.text.substr(ar->begin,
                                       (e == std::string::npos ? src_.text.size() : e) - ar->begin);
          }
          word = roleWordIn(around);
        }
      }
      if (auto *cs = llvm::dyn_cast<clang::CompoundStmt>(p)) {
        // early exits before `child`: `if (warp != 0) return;` makes the rest "warp 0"
        for (auto *st : cs->body()) {
          if (st == child) break;
          auto *ifs = llvm::dyn_cast<clang::IfStmt>(st);
          if (!ifs || ifs->getElse()) continue;
          const clang::Stmt *th = ifs->getThen();
          if (auto *c2 = llvm::dyn_cast<clang::CompoundStmt>(th); c2 && c2->size() == 1)
            th = c2->body_front();
          if (!llvm::isa<clang::ReturnStmt>(th)) continue;
          std::string cond = oneLine(textOf(ifs->getCond()));
          std::string r = condRole(parseExpr(cond), vars, 0);
          if (r.empty()) continue;
          roles.push_back(negateRole(r));
          guards.push_back("!(" + cond + ")");
        }
      }
    }
    std::reverse(roles.begin(), roles.end());
    std::reverse(guards.begin(), guards.end());
    for (size_t i = 0; i < roles.size(); ++i) {
      site.role += (i ? " / " : "") + roles[i];
      site.guard += (i ? " && " : "") + guards[i];
    }
    site.role_word = word;
  }

  // ---- barrier names ----------------------------------------------------------------------
  // From an address expression: &full[s] -> ("full", "s"); full + s -> same; &q_full -> ("q_full",
  // ""). Follows a local variable's initializer once (uint32_t a = smem_u32(&bar)).
  void barName(const clang::Expr *e, std::string &name, std::string &idx, int depth = 0) {
    if (!e || depth > 3) return;
    e = e->IgnoreParenImpCasts();
    if (auto *c = llvm::dyn_cast<clang::CallExpr>(e)) {
      for (auto *a : c->arguments()) {
        barName(a, name, idx, depth + 1);
        if (!name.empty()) return;
      }
      return;
    }
    if (auto *ce = llvm::dyn_cast<clang::ExplicitCastExpr>(e))
      return barName(ce->getSubExpr(), name, idx, depth + 1);
    if (auto *u = llvm::dyn_cast<clang::UnaryOperator>(e);
        u && u->getOpcode() == clang::UO_AddrOf) {
      const clang::Expr *sub = u->getSubExpr()->IgnoreParenImpCasts();
      if (auto *as = llvm::dyn_cast<clang::ArraySubscriptExpr>(sub)) {
        name = oneLine(textOf(as->getBase()));
        if (!as->getIdx()->HasSideEffects(*ctx_)) idx = oneLine(textOf(as->getIdx()));
        return;
      }
      name = oneLine(textOf(sub));
      return;
    }
    if (auto *b = llvm::dyn_cast<clang::BinaryOperator>(e);
        b && b->getOpcode() == clang::BO_Add && b->getLHS()->getType()->isPointerType()) {
      name = oneLine(textOf(b->getLHS()->IgnoreParenImpCasts()));
      if (!b->getRHS()->HasSideEffects(*ctx_)) idx = oneLine(textOf(b->getRHS()));
      return;
    }
    if (auto *d = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
      if (auto *v = llvm::dyn_cast<clang::VarDecl>(d->getDecl());
          v && v->hasInit() && !llvm::isa<clang::ParmVarDecl>(v) &&
          !v->getType()->isPointerType()) {
        std::string n2, i2;
        barName(v->getInit(), n2, i2, depth + 1);
        if (!n2.empty()) {
          name = n2;
          idx = "";
          return;
        }  // the index may have changed since
      }
      name = d->getNameInfo().getAsString();
    }
  }

  // The parameter of `fn` an expression reads (first DeclRefExpr to a ParmVarDecl), or -1.
  int paramRead(const clang::Expr *e, const clang::FunctionDecl *fn) {
    if (!e || !fn) return -1;
    int found = -1;
    std::function<void(const clang::Stmt *)> walk = [&](const clang::Stmt *s) {
      if (!s || found >= 0) return;
      if (auto *d = llvm::dyn_cast<clang::DeclRefExpr>(s))
        if (auto *p = llvm::dyn_cast<clang::ParmVarDecl>(d->getDecl()))
          for (unsigned i = 0; i < fn->getNumParams(); ++i)
            if (fn->getParamDecl(i) == p || fn->getParamDecl(i)->getName() == p->getName()) {
              found = (int)i;
              return;
            }
      for (auto *c : s->children()) walk(c);
    };
    walk(e);
    return found;
  }

  // ---- planning the edits ------------------------------------------------------------------
  struct Ctx {  // how a bounded wait names its site, counter and barrier index
    std::string site, it, idx;
  };
  unsigned newSite(const std::string &kind, unsigned line, unsigned wait_line,
                   const clang::Stmt *at) {
    WatchSite s;
    s.id = (unsigned)sites_.size();
    s.kind = kind;
    s.line = line;
    s.wait_line = wait_line;
    auto *fn = at ? enclosingFunction(at) : nullptr;
    if (fn) s.function = fn->getNameAsString();
    if (at) roleOf(at, s);
    sites_.push_back(s);
    return s.id;
  }
  unsigned slotIn(const clang::FunctionDecl *kernel, unsigned site) {
    auto &v = kernel_slots_[kernel->getCanonicalDecl()];
    v.push_back(site);
    return (unsigned)v.size() - 1;
  }

  bool helperEligible(const clang::FunctionDecl *fn) {
    if (!fn || isKernel(fn) || fn->isVariadic()) return false;
    if (llvm::isa<clang::CXXMethodDecl>(fn) &&
        llvm::cast<clang::CXXMethodDecl>(fn)->getParent()->isLambda())
      return false;
    if (fn->getPreviousDecl())
      return false;  // a prototype elsewhere would need the defaults instead
    for (auto *p : fn->parameters())
      if (p->isParameterPack()) return false;
    auto tl = fn->getFunctionTypeLoc();
    if (!tl || !mainFileOffset(*ctx_, tl.getRParenLoc())) return false;
    return true;
  }

  // Ctx for a wait inside `fn`, with `at` the wait statement.
  std::optional<Ctx> ctxFor(const clang::FunctionDecl *fn, const clang::Stmt *at,
                            const std::string &kind, unsigned wait_line, const std::string &bar,
                            const std::string &idx) {
    Ctx c;
    if (isKernel(fn)) {
      unsigned id = newSite(kind, wait_line, wait_line, at);
      sites_[id].bar = bar;
      unsigned k = slotIn(fn, id);
      c.site = std::to_string(id) + "u";
      c.it = "&__wsw_cnt[" + std::to_string(k) + "]";
      c.idx = idx.empty() ? "-1" : "(int)(" + idx + ")";
      return c;
    }
    if (fn && helperEligible(fn)) {
      auto *canon = fn->getCanonicalDecl();
      if (!helpers_.count(canon)) {
        unsigned id = newSite("helper-default", wait_line, wait_line, at);
        sites_[id].bar = bar;
        helpers_[canon] = id;
        auto tl = fn->getFunctionTypeLoc();
        unsigned rp = *mainFileOffset(*ctx_, tl.getRParenLoc());
        std::string p = fn->getNumParams() ? ", " : "";
        add(rp, 0,
            p + "unsigned __wsw_site = " + std::to_string(id) +
                "u, unsigned *__wsw_it = nullptr, int __wsw_idx = -1");
      }
      c.site = "__wsw_site";
      c.it = "__wsw_it";
      c.idx = "__wsw_idx";
      return c;
    }
    unsigned id =
        newSite(kind, wait_line, wait_line, at);  // a lambda, a prototype'd function: no counter
    sites_[id].bar = bar;
    c.site = std::to_string(id) + "u";
    c.it = "(unsigned *)nullptr";
    c.idx = idx.empty() ? "-1" : "(int)(" + idx + ")";
    return c;
  }

  std::string fireCall(const Ctx &c, const std::string &addr, bool shared,
                       const std::string &parity, unsigned wait_line, const std::string &waited) {
    std::string iter = c.it.rfind("&", 0) == 0 ? c.it.substr(1)
                       : c.it.find("nullptr") != std::string::npos
                           ? "0xffffffffu"
                           : c.it + " ? *" + c.it + " : 0xffffffffu";
    return "__wsw_fire(" + c.site + ", " + iter + ", " + c.idx + ", " +
           (addr.empty() ? "0ull" : "(unsigned long long)(" + addr + ")") + ", " +
           (shared ? "1" : "0") + ", " +
           (parity.empty() ? "0xffffffffu" : "(unsigned)(" + parity + ")") + ", " +
           std::to_string(wait_line) + "u, " + waited + ")";
  }

  // Puts `pre` right before statement `s` (wrapping s in braces when its parent is not a block).
  void beforeStmt(const clang::Stmt *s, const std::string &pre) {
    const clang::Stmt *p = parentStmt(s);
    auto r = rangeSemi(s);
    if (!r) return;
    if (p && llvm::isa<clang::CompoundStmt>(p)) {
      add(r->begin, 0, pre + " ");
    } else {
      add(r->begin, 0, "{ " + pre + " ");
      add(r->end, 0, " }");
    }
  }

  void boundLoop(const Prim &pr, const std::string &addr, bool shared, const std::string &parity,
                 const std::string &bar, const std::string &idx, const std::string &kind) {
    auto lr = rangeSemi(pr.loop);
    if (!lr) {
      warnings_.push_back("line " + std::to_string(lineOfStmt(pr.stmt)) +
                          ": the wait loop comes from a macro: not bounded");
      return;
    }
    unsigned wl = lineOfStmt(pr.loop);
    auto c = ctxFor(pr.fn, pr.loop, kind, wl, bar, idx);
    if (!c) return;
    std::string tick = "if (__wsw_tick(__wsw_s)) " +
                       fireCall(*c, addr, shared, parity, wl, "__wsw_waited(__wsw_s)") + ";";
    if (pr.k == Prim::Asm) {
      beforeStmt(pr.stmt, tick);
    } else {  // the try is in the loop's condition (or body): tick at the start of the body
      const clang::Stmt *body = nullptr;
      if (auto *w = llvm::dyn_cast<clang::WhileStmt>(pr.loop)) body = w->getBody();
      if (auto *d = llvm::dyn_cast<clang::DoStmt>(pr.loop)) body = d->getBody();
      if (auto *f = llvm::dyn_cast<clang::ForStmt>(pr.loop)) body = f->getBody();
      if (!body) return;
      if (auto *cs = llvm::dyn_cast<clang::CompoundStmt>(body)) {
        auto lb = mainFileOffset(*ctx_, cs->getLBracLoc());
        if (!lb) return;
        add(*lb + 1, 0, " " + tick);
      } else {
        auto br = rangeSemi(body);
        if (!br) return;
        add(br->begin, 0, "{ " + tick + " ");
        add(br->end, 0, " }");
      }
    }
    add(lr->begin, 0, "{ __wsw_state __wsw_s{0u, 0ull}; ");
    add(lr->end, 0, " __wsw_done(" + c->site + ", " + c->it + "); }");
  }

  void planAsmLoop(const Prim &pr, const clang::GCCAsmStmt *a) {
    std::string t = a->getAsmString();
    auto loop = asmLoop(t);
    auto r = rangeSemi(a);
    if (!loop || !r) return;
    unsigned wl = lineOfStmt(a);
    unsigned nout = a->getNumOutputs(), nin = a->getNumInputs();
    WaitOperands w = waitOperands(t);
    std::string addr, parity, bar, idx;
    bool shared = false;
    auto operandExpr = [&](int n) -> const clang::Expr * {
      if (n < 0) return nullptr;
      if ((unsigned)n < nout) return a->getOutputExpr(n);
      if ((unsigned)n < nout + nin) return a->getInputExpr(n - nout);
      return nullptr;
    };
    if (auto *e = operandExpr(w.addr)) {
      addr = textOf(e);
      std::string con = (unsigned)w.addr < nout ? a->getOutputConstraint(w.addr)
                                                : a->getInputConstraint(w.addr - nout);
      shared = con.find('r') != std::string::npos || w.shared_space;
      barName(e, bar, idx);
    }
    if (auto *e = operandExpr(w.parity))
      parity = textOf(e);
    else if (w.parity_imm >= 0)
      parity = std::to_string(w.parity_imm);
    if (!w.parity_form) parity.clear();
    auto c = ctxFor(pr.fn, a, "asm-loop", wl, bar, idx);
    if (!c) return;
    // The template: the backward branch checks %globaltimer; on expiry the asm leaves with E = 1.
    // W is __wsw_end_watch() (in the watchdog's exit mode the address of __wsw_fire_t, the time
    // of the first expiry; else 0) and G the grace: in exit mode the loop also leaves once the
    // grace after another warp's expiry is over, and the fire path ends the warp (wswatch_rt.cuh)
    // rather than its own bound, up to a whole bound later, keeping the kernel alive. The trap mode
    // skips that check.
    const std::string E = "%" + std::to_string(nout), B = "%" + std::to_string(nout + 1 + nin),
                      W = "%" + std::to_string(nout + 2 + nin),
                      G = "%" + std::to_string(nout + 3 + nin);
    std::string leave;  // a predicated branch back falls through when the wait succeeded
    if (!loop->pred.empty())
      leave = "@" + (loop->pred[0] == '!' ? loop->pred.substr(1) : "!" + loop->pred) +
              " bra __wsw_ok; ";
    std::string body =
        renumber(t.substr(0, loop->begin), (int)nout) + leave +
        "mov.u64 __wsw_t, %%globaltimer; sub.u64 __wsw_t, __wsw_t, __wsw_t0; "
        "setp.eq.u64 __wsw_q, " + W + ", 0; @__wsw_q bra __wsw_bnd; "
        "ld.volatile.u64 __wsw_f, [" + W + "]; setp.eq.u64 __wsw_q, __wsw_f, 0; "
        "@__wsw_q bra __wsw_bnd; add.u64 __wsw_f, __wsw_f, " + G + "; "
        "add.u64 __wsw_n, __wsw_t0, __wsw_t; setp.ge.u64 __wsw_q, __wsw_n, __wsw_f; "
        "@__wsw_q bra __wsw_exp; __wsw_bnd: "
        "setp.lt.u64 __wsw_q, __wsw_t, " +
        B + "; @__wsw_q bra " + loop->label + "; __wsw_exp: mov.u32 " + E +
        ", 1; bra __wsw_out; __wsw_ok: " + renumber(t.substr(loop->end), (int)nout);
    std::string tmpl = "{ .reg .u64 __wsw_t0, __wsw_t, __wsw_f, __wsw_n; .reg .pred __wsw_q; "
                       ".reg .u32 __wsw_d; mov.u32 " +
                       E + ", 0; mov.u64 __wsw_t0, %%globaltimer; " + body +
                       " __wsw_out: mov.u32 __wsw_d, 0; }";
    auto operand = [&](bool out, unsigned i) {
      std::string name = out ? a->getOutputName(i).str() : a->getInputName(i).str();
      std::string con = out ? a->getOutputConstraint(i) : a->getInputConstraint(i);
      const clang::Expr *e = out ? a->getOutputExpr(i) : a->getInputExpr(i);
      return (name.empty() ? "" : "[" + name + "] ") + "\"" + cEscape(con) + "\"(" +
             oneLine(textOf(e)) + ")";
    };
    std::string outs, ins, clob;
    for (unsigned i = 0; i < nout; ++i) outs += operand(true, i) + ", ";
    outs += "\"=r\"(__wsw_e)";
    for (unsigned i = 0; i < nin; ++i) ins += operand(false, i) + ", ";
    ins += "\"l\"(__wsw_bound_ns), \"l\"(__wsw_end_watch()), \"l\"(__wsw_grace())";
    for (unsigned i = 0; i < a->getNumClobbers(); ++i)
      clob += (i ? ", " : "") + ("\"" + cEscape(a->getClobber(i)) + "\"");
    std::string stmt = std::string("asm ") + (a->isVolatile() ? "volatile" : "") + "(\"" +
                       cEscape(tmpl) + "\" : " + outs + " : " + ins +
                       (clob.empty() ? "" : " : " + clob) + ");";
    std::string rep = "{ unsigned __wsw_e; " + stmt + " if (__wsw_e) " +
                      fireCall(*c, addr, shared, parity, wl, "__wsw_bound_ns") + "; __wsw_done(" +
                      c->site + ", " + c->it + "); }";
    // keep the user's line count: the statement may have spanned several lines
    std::string old = src_.text.substr(r->begin, r->size());
    rep += std::string(std::count(old.begin(), old.end(), '\n'), '\n');
    add(r->begin, r->size(), rep);
  }

  void planBarrier(const Prim &pr) {
    auto *mc = llvm::cast<clang::CXXMemberCallExpr>(pr.stmt);
    std::string m = mc->getMethodDecl()->getNameAsString();
    auto r = range(mc);
    const clang::Expr *obj = mc->getImplicitObjectArgument();
    if (!r || !obj) return;
    std::string o = oneLine(textOf(obj));
    bool arrow = false;
    if (auto *me = llvm::dyn_cast<clang::MemberExpr>(mc->getCallee()->IgnoreParenImpCasts()))
      arrow = me->isArrow();
    if (arrow) o = "(*" + o + ")";
    unsigned wl = lineOfStmt(mc);
    std::string bar, idx;
    barName(obj, bar, idx);
    if (bar.empty()) bar = o;
    auto c = ctxFor(pr.fn, mc, "cuda-barrier", wl, bar, idx);
    if (!c || c->site == "__wsw_site") {
      // inside a helper: the helper's call sites carry the site; use its parameters
    }
    std::string hint = "::cuda::std::chrono::nanoseconds(20000)";
    std::string tail =
        ", " + hint + ", " + c->site + ", " + c->it + ", " + std::to_string(wl) + "u)";
    std::string rep;
    if (m == "wait" && mc->getNumArgs() == 1)
      rep = "__wsw_barrier_wait(" + o + ", " + oneLine(textOf(mc->getArg(0))) + tail;
    else if (m == "wait_parity" && mc->getNumArgs() == 1)
      rep = "__wsw_barrier_wait_parity(" + o + ", " + oneLine(textOf(mc->getArg(0))) + tail;
    else if (m == "arrive_and_wait" && mc->getNumArgs() == 0)
      rep = "__wsw_barrier_arrive_and_wait(" + o + tail;
    else
      return;
    std::string old = src_.text.substr(r->begin, r->size());
    rep += std::string(std::count(old.begin(), old.end(), '\n'), ' ');
    add(r->begin, r->size(), rep);
  }

  void plan() {
    planNamedBarriers();
    planShadow();
    planKernelInit();
    // 1. the waits themselves
    for (auto &pr : prims_) {
      if (pr.k == Prim::AsmLoop) {
        planAsmLoop(pr, llvm::cast<clang::GCCAsmStmt>(pr.stmt));
      } else if (pr.k == Prim::Asm) {
        auto *a = llvm::cast<clang::GCCAsmStmt>(pr.stmt);
        if (pr.fn && enclosingFunction(pr.loop) != pr.fn) continue;
        std::string t = a->getAsmString();
        WaitOperands w = waitOperands(t);
        unsigned nout = a->getNumOutputs(), nin = a->getNumInputs();
        std::string addr, parity, bar, idx;
        bool shared = w.shared_space;
        auto operandExpr = [&](int n) -> const clang::Expr * {
          if (n < 0) return nullptr;
          if ((unsigned)n < nout) return a->getOutputExpr(n);
          if ((unsigned)n < nout + nin) return a->getInputExpr(n - nout);
          return nullptr;
        };
        if (auto *e = operandExpr(w.addr)) {
          addr = textOf(e);
          std::string con = (unsigned)w.addr < nout ? a->getOutputConstraint(w.addr)
                                                    : a->getInputConstraint(w.addr - nout);
          shared = con.find('r') != std::string::npos || w.shared_space;
          barName(e, bar, idx);
          if (pr.fn && !isKernel(pr.fn))
            helper_bar_param_[pr.fn->getCanonicalDecl()] = paramRead(e, pr.fn);
        }
        if (auto *e = operandExpr(w.parity))
          parity = textOf(e);
        else if (w.parity_imm >= 0)
          parity = std::to_string(w.parity_imm);
        if (!w.parity_form) parity.clear();
        boundLoop(pr, oneLine(addr), shared, oneLine(parity), bar, idx, "loop");
      } else if (pr.k == Prim::CallTry) {
        auto *c = llvm::cast<clang::CallExpr>(pr.stmt);
        std::string n = calleeName(c);
        std::string addr, parity, bar, idx;
        bool shared = false;
        auto *def = calleeDef(c);
        bool user = def && try_helpers_.count(def->getCanonicalDecl());
        if (!user) {  // cuda::ptx: the first pointer argument, then the parity
          for (unsigned i = 0; i < c->getNumArgs(); ++i)
            if (c->getArg(i)->getType()->isPointerType()) {
              addr = "__wsw_ptr(" + oneLine(textOf(c->getArg(i))) + ")";
              barName(c->getArg(i), bar, idx);
              if (n.find("parity") != std::string::npos && i + 1 < c->getNumArgs())
                parity = oneLine(textOf(c->getArg(i + 1)));
              break;
            }
        } else {
          // the user's try helper: the argument its wait address reads; the next one as parity
          for (unsigned i = 0; i < c->getNumArgs(); ++i) {
            auto *arg = c->getArg(i);
            if (arg->getType()->isPointerType()) {
              addr = "__wsw_ptr(" + oneLine(textOf(arg)) + ")";
              barName(arg, bar, idx);
              if (i + 1 < c->getNumArgs() && c->getArg(i + 1)->getType()->isIntegerType())
                parity = oneLine(textOf(c->getArg(i + 1)));
              break;
            }
          }
          if (addr.empty() && c->getNumArgs() >= 1 && c->getArg(0)->getType()->isIntegerType()) {
            addr = oneLine(textOf(c->getArg(0)));
            shared = true;
            barName(c->getArg(0), bar, idx);
            if (c->getNumArgs() >= 2) parity = oneLine(textOf(c->getArg(1)));
          }
          std::string tt;
          // a try helper on the state-token form has no parity to report
          struct AF : clang::RecursiveASTVisitor<AF> {
            std::string t;
            bool VisitGCCAsmStmt(clang::GCCAsmStmt *a) {
              if (isWaitAsm(a->getAsmString())) t = a->getAsmString();
              return true;
            }
          } af;
          if (def && def->hasBody()) af.TraverseStmt(def->getBody());
          if (!af.t.empty() && !waitOperands(af.t).parity_form) parity.clear();
        }
        if (pr.fn && !isKernel(pr.fn) && c->getNumArgs() > 0) {
          int pi = -1;
          for (unsigned i = 0; i < c->getNumArgs() && pi < 0; ++i)
            if (c->getArg(i)->getType()->isPointerType()) pi = paramRead(c->getArg(i), pr.fn);
          helper_bar_param_[pr.fn->getCanonicalDecl()] = pi;
        }
        boundLoop(pr, addr, shared, parity, bar, idx, "call-loop");
      } else if (pr.k == Prim::Barrier) {
        planBarrier(pr);
      }
    }
    // 2. calls of the helpers: each call in a kernel becomes its own site with its counter
    for (auto *c : calls_) {
      auto *def = calleeDef(c);
      if (!def) continue;
      auto it = helpers_.find(def->getCanonicalDecl());
      if (it == helpers_.end()) continue;
      auto *caller = enclosingFunction(c);
      if (!caller || caller->getCanonicalDecl() == def->getCanonicalDecl()) continue;
      bool defaulted = false;
      for (auto *a : c->arguments()) defaulted |= llvm::isa<clang::CXXDefaultArgExpr>(a);
      auto rp = mainFileOffset(*ctx_, c->getRParenLoc());
      if (defaulted || !rp) {
        warnings_.push_back(
            "line " + std::to_string(lineOfStmt(c)) + ": a call of " + def->getNameAsString() +
            " the rewrite cannot extend (macro or defaulted argument): reported at the helper");
        continue;
      }
      std::string bar, idx;
      int bp = helper_bar_param_.count(def->getCanonicalDecl())
                   ? helper_bar_param_[def->getCanonicalDecl()]
                   : -1;
      if (bp >= 0 && (unsigned)bp < c->getNumArgs()) barName(c->getArg(bp), bar, idx);
      if (bar.empty()) bar = sites_[it->second].bar;
      unsigned line = lineOfStmt(c);
      unsigned id = newSite("helper-call", line, sites_[it->second].wait_line, c);
      sites_[id].bar = bar;
      std::string itp = "(unsigned *)nullptr";
      if (isKernel(caller)) itp = "&__wsw_cnt[" + std::to_string(slotIn(caller, id)) + "]";
      std::string ix = idx.empty() ? "-1" : "(int)(" + idx + ")";
      add(*rp, 0,
          std::string(c->getNumArgs() ? ", " : "") + std::to_string(id) + "u, " + itp + ", " + ix);
    }
    // 3. the per-thread iteration counters, one array per kernel
    for (auto &[k, slots] : kernel_slots_) {
      const clang::FunctionDecl *def = nullptr;
      if (!k->hasBody(def) || !def) continue;
      auto *body = llvm::dyn_cast<clang::CompoundStmt>(def->getBody());
      if (!body) continue;
      auto lb = mainFileOffset(*ctx_, body->getLBracLoc());
      if (!lb) continue;
      add(*lb + 1, 0, " unsigned __wsw_cnt[" + std::to_string(slots.size()) + "] = {};");
    }
  }

  // ---- host hooks: __wsw_ensure() before each launch, __wsw_before_reset() before a reset -----
  void hostHooks(clang::ASTContext &ctx) {
    struct V : clang::RecursiveASTVisitor<V> {
      Rewriter &rw;
      clang::ASTContext &ctx;
      V(Rewriter &r, clang::ASTContext &c) : rw(r), ctx(c) {}
      bool VisitCallExpr(clang::CallExpr *c) {
        auto &sm = ctx.getSourceManager();
        if (!sm.isInMainFile(sm.getExpansionLoc(c->getBeginLoc()))) return true;
        std::string hook;
        if (llvm::isa<clang::CUDAKernelCallExpr>(c))
          hook = "__wsw_ensure();";
        else if (auto *f = c->getDirectCallee()) {
          std::string n = f->getNameAsString();
          if (n.rfind("cudaLaunch", 0) == 0 || n.rfind("cuLaunch", 0) == 0)
            hook = "__wsw_ensure();";
          if (n == "cudaDeviceReset") hook = "__wsw_before_reset();";
        }
        if (hook.empty()) return true;
        // the statement in a block that holds the call
        clang::DynTypedNode n = clang::DynTypedNode::create(*static_cast<clang::Stmt *>(c));
        const clang::Stmt *stmt = c;
        for (int g = 0; g < 100; ++g) {
          auto ps = ctx.getParents(n);
          if (ps.empty()) return true;
          if (auto *p = ps[0].get<clang::Stmt>()) {
            if (llvm::isa<clang::CompoundStmt>(p)) break;
            stmt = p;
            n = ps[0];
            continue;
          }
          // A local's initializer (`cudaError_t e = cudaLaunchKernelEx(...)`): its declaration
          // statement is the one the hook goes before.
          if (ps[0].get<clang::VarDecl>()) {
            n = ps[0];
            continue;
          }
          return true;  // a call in an initializer outside any block: left alone
        }
        clang::SourceLocation b = sm.getExpansionLoc(stmt->getBeginLoc());
        if (!sm.isInMainFile(b)) return true;
        unsigned off = sm.getFileOffset(b);
        if (rw.hook_offsets_.insert(off).second) rw.add(off, 0, hook + " ");
        return true;
      }
    } v(*this, ctx);
    v.TraverseDecl(ctx.getTranslationUnitDecl());
  }

  std::string assemble() {
    std::vector<Ins> ins = ins_;
    std::stable_sort(ins.begin(), ins.end(), [](const Ins &a, const Ins &b) {
      if (a.off != b.off) return a.off < b.off;
      if ((a.len == 0) != (b.len == 0))
        return a.len == 0;  // insertions before a replacement at the same place
      return a.seq < b.seq;
    });
    std::string body;
    unsigned pos = 0;
    for (auto &e : ins) {
      if (e.off < pos) {  // overlaps a replacement already applied
        warnings_.push_back("an edit at byte " + std::to_string(e.off) +
                            " overlapped another and was dropped");
        continue;
      }
      body += src_.text.substr(pos, e.off - pos);
      body += e.text;
      pos = e.off + e.len;
    }
    body += src_.text.substr(pos);
    std::string abs = fs::absolute(path_).string();
    std::string rt = opt_.runtime_include;  // wswatch_rt.cuh, or its shadow variant beside it
    if (shadow_) rt = rt.substr(0, rt.size() - std::string(".cuh").size()) + "_shadow.cuh";
    std::string out = "#include \"" + rt + "\"\n#line 1 \"" + cEscape(abs) + "\"\n" + body;
    if (!out.empty() && out.back() != '\n') out += "\n";
    out += "// ---- wsreduce watchdog: the wait sites of this file ----\n";
    out += "// mbarrier shadow: " +
           (shadow_ ? std::string("on") : "off (" + oneLine(shadow_off_) + ")") + "\n";
    out += "static const wswatch_site_t __wsw_site_tab[] = {\n";
    if (sites_.empty()) out += "  {0u, 0u, \"\", \"\", \"\", \"\"},\n";
    for (auto &s : sites_) {
      std::string role = s.role;
      if (!s.role_word.empty()) role = s.role_word + (role.empty() ? "" : ": " + role);
      out += "  {" + std::to_string(s.line) + "u, " + std::to_string(s.wait_line) + "u, \"" +
             cField(role, 64) + "\", \"" + cField(s.guard, 64) + "\", \"" + cField(s.bar, 24) +
             "\", \"" + cField(s.kind, 16) + "\"},\n";
    }
    out += "};\n";
    out +=
        "static const wswatch_site_t *__wsw_get_sites(unsigned *n, const char **file) {\n  *n = " +
        std::to_string(sites_.size()) + "u;\n  *file = \"" +
        cField(fs::path(path_).filename().string(), 128) + "\";\n  return __wsw_site_tab;\n}\n";
    return out;
  }
};

}  // namespace

WatchResult instrumentWatchdog(const std::string &text, const std::string &path,
                               const WatchOptions &opt) {
  WatchResult res;
  auto parsed = parseOnce(text, path, opt.parse);  // the reducer's parse check lends its ASTs
  if (!parsed || parsed->sides.empty()) {
    res.error = "the file could not be parsed";
    return res;
  }
  if (!parsed->ok()) {
    res.error = "the file does not parse: " + parsed->firstError();
    return res;
  }
  Rewriter rw(*parsed, path, opt);
  return rw.run();
}

}  // namespace wsr

namespace wsr {
std::function<std::string(const std::string &, const std::string &)> watchdogInstrumenter(
    WatchOptions opt) {
  return [opt](const std::string &text, const std::string &path) {
    auto r = instrumentWatchdog(text, path, opt);
    return r.ok ? r.text : std::string();
  };
}
}  // namespace wsr
