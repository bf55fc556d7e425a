// symbolic.hpp, bounds.hpp, linear.hpp, valid.hpp: fixed cases, and a property test that checks
// simplify against a reference evaluator written here (C semantics, computed in __int128).
//
// The property test runs TINYT_PROPERTY_CASES random expressions (10^4 by default; set it to
// 1000000 for the long mode).
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <random>

#include <tinyt.hpp>
#include <tinyt/internals.hpp>

using namespace tinyt;

TEST_CASE("symbolic: index arithmetic folds to its simplest form") {
  UOp x = Variable("x", 0, 10), y = Variable("y", 0, 3), r = Variable("r", 0, 15);
  CHECK(simplify((x * 4 + y).idiv(4)) == x);
  CHECK(simplify((x * 4 + y) % 4) == y);
  CHECK(simplify((r % 4) + r.idiv(4) * 4) == r);
  CHECK(simplify(x + 3 + x * 2 - 3) == x * 3);
  CHECK(simplify(x - x) == UOp::const_(dtypes::index, 0));
  CHECK(simplify((x + 1) * 3 * 2) == x * 6 + 6);
  CHECK(simplify((x * 6 + 4).idiv(2)) == x * 3 + 2);
  CHECK(simplify((x * 4 + y).idiv(4).idiv(3)) == x.idiv(3));
  CHECK(simplify((x * 2 + 3).lt(9)) == x.lt(3));
  CHECK(simplify(x.idiv(-3)) == x.idiv(3) * -1);
  CHECK(simplify(x.lt(11)) == UOp::const_(dtypes::bool_, true));
  CHECK(simplify(x.maximum(11)) == UOp::const_(dtypes::index, 11));
  CHECK(simplify(x % 16) == x);
  CHECK(simplify(x * 0) == UOp::const_(dtypes::index, 0));
  // a sum whose terms off the multiples of c stay within one multiple of c, whatever their signs
  // (a flipped axis: 800*k + 25*a + 24 - 5*b - c is in [800*k, 800*k + 800))
  UOp k = Variable("k", 0, 63), a = Variable("a", 0, 31), b = Variable("b", 0, 4), c = Variable("c", 0, 4);
  CHECK(simplify((k * 800 + a * 25 + 24 - b * 5 - c).idiv(800)) == k);
  CHECK(simplify((k * 800 + a * 25 + 24 - b * 5 - c) % 800) == simplify(a * 25 + 24 - b * 5 - c));
  // terms below the part of c that the others share: (24*y + x) // 48 with x < 24 is y // 2
  UOp row = Variable("row", 0, 23), col = Variable("col", 0, 23);
  CHECK(simplify((row * 24 + col).idiv(48)) == row.idiv(2));
  CHECK(simplify((row * 24 + col) % 48) == simplify((row % 2) * 24 + col));
  // order of operands does not matter: both spellings reach one node
  CHECK(simplify(y * x + x * 2) == simplify(x * 2 + x * y));
}

TEST_CASE("symbolic: float arithmetic keeps NaN and signed zero semantics") {
  UOp f = Variable("i", 0, 4).cast(dtypes::float32);
  UOp zero = UOp::const_(dtypes::float32, 0.0);
  CHECK_FALSE(simplify(f * zero) == zero);  // inf*0 is NaN, so x*0 is not 0 for floats
  CHECK_FALSE(simplify(f + zero) == f);     // -0.0 + 0.0 is +0.0
  CHECK(simplify(f * 1.0) == f);
  CHECK(simplify(UOp::const_(dtypes::float32, 65536.0).cast(dtypes::float16)) ==
        UOp::const_(dtypes::float16, INFINITY));
}

TEST_CASE("symbolic: bounds") {
  UOp x = Variable("x", -3, 10), y = Variable("y", 2, 5);
  auto b = [](const UOp& u) {
    return std::pair<int64_t, int64_t>(static_cast<int64_t>(vmin(u)),
                                       static_cast<int64_t>(vmax(u)));
  };
  CHECK(b(x + y) == std::pair<int64_t, int64_t>(-1, 15));
  CHECK(b(x * y) == std::pair<int64_t, int64_t>(-15, 50));
  CHECK(b(x.idiv(y)) == std::pair<int64_t, int64_t>(-1, 5));
  CHECK(b(x % y) == std::pair<int64_t, int64_t>(-3, 4));
  CHECK(b(x.maximum(y)) == std::pair<int64_t, int64_t>(2, 10));
  CHECK(b(x.lt(y)) == std::pair<int64_t, int64_t>(0, 1));
  CHECK(b(y.lt(x + 20)) == std::pair<int64_t, int64_t>(1, 1));
  // an int32 sum that may overflow may be anything
  UOp big = UOp::variable("big", 0, INT32_MAX, dtypes::int32);
  CHECK(b(big + 1) == std::pair<int64_t, int64_t>(INT32_MIN, INT32_MAX));
  CHECK_THROWS_AS(bounds(UOp::const_(dtypes::float32, 1.0)), InternalError);
}

TEST_CASE("symbolic: int32 wraparound is respected") {
  UOp big = UOp::variable("big", 0, INT32_MAX, dtypes::int32);
  // (big*2)/2 is not big: big*2 wraps for big >= 2^30
  CHECK_FALSE(simplify((big * 2).idiv(2)) == big);
  UOp small = UOp::variable("small", 0, 1000, dtypes::int32);
  CHECK(simplify((small * 2).idiv(2)) == small);
}

TEST_CASE("symbolic: simplification under a validity mask") {
  UOp r = Variable("r", 0, 15), y = Variable("y", 0, 3);
  CHECK(uop_given_valid(r.lt(4), r.idiv(4)) == UOp::const_(dtypes::index, 0));
  CHECK(uop_given_valid((r * 4 + y).lt(8), (r * 4 + y).idiv(8)) == UOp::const_(dtypes::index, 0));
  // r >= 4 (written as !(r < 4)) makes r-4 non-negative, so the division folds like a view's
  UOp ge4 = r.lt(4).logical_not();
  CHECK(uop_given_valid(ge4 & r.lt(8), (r - 4).idiv(4)) == UOp::const_(dtypes::index, 0));
  // clauses implied by the others go away
  CHECK(simplify_valid(r.lt(4) & r.lt(10)) == r.lt(4));
  CHECK(simplify_valid(r.lt(4) & r.lt(2).logical_not()) == (r.lt(4) & r.lt(2).logical_not()));
  CHECK(simplify_valid(r.lt(2) & r.lt(5).logical_not()) == UOp::const_(dtypes::bool_, false));
}

// ---- the property test --------------------------------------------------------------------

namespace {
using Env = std::map<std::string, i128>;

// Reference semantics, written independently of tinyt's folding: C's truncating division and
// remainder, two's complement wraparound for int32, exact integers for index.
i128 wrap32(i128 v) {
  i128 m = v % (static_cast<i128>(1) << 32);
  if (m < 0) m += static_cast<i128>(1) << 32;
  return m >= (static_cast<i128>(1) << 31) ? m - (static_cast<i128>(1) << 32) : m;
}

struct Overflow {};

i128 eval(const UOp& u, const Env& env, std::map<const UOpNode*, i128>& memo) {
  if (auto it = memo.find(u.get()); it != memo.end()) return it->second;
  std::vector<i128> s;
  for (const UOp& x : u.src()) s.push_back(eval(x, env, memo));
  i128 v = 0;
  switch (u.op()) {
    case Ops::CONST:
      v = u.arg().is<bool>() ? u.arg().get<bool>() : u.arg().as_int();
      break;
    case Ops::DEFINE_VAR:
      v = env.at(u.arg()[0].get<std::string>());
      break;
    case Ops::ADD:
      v = s[0] + s[1];
      break;
    case Ops::SUB:
      v = s[0] - s[1];
      break;
    case Ops::MUL:
      v = s[0] * s[1];
      break;
    case Ops::NEG:
      v = -s[0];
      break;
    case Ops::IDIV:
      if (s[1] == 0) throw Overflow{};
      v = s[0] / s[1];
      break;
    case Ops::MOD:
      if (s[1] == 0) throw Overflow{};
      v = s[0] % s[1];
      break;
    case Ops::MAX:
      v = s[0] > s[1] ? s[0] : s[1];
      break;
    case Ops::CMPLT:
      v = s[0] < s[1];
      break;
    case Ops::CMPNE:
      v = s[0] != s[1];
      break;
    case Ops::CMPEQ:
      v = s[0] == s[1];
      break;
    case Ops::AND:
      v = s[0] & s[1];
      break;
    case Ops::OR:
      v = s[0] | s[1];
      break;
    case Ops::XOR:
      v = s[0] ^ s[1];
      break;
    case Ops::WHERE:
      v = s[0] ? s[1] : s[2];
      break;
    case Ops::CAST:  // wrapped below to the target dtype
      v = s[0];
      break;
    default:
      FAIL("reference evaluator: unexpected op ", op_name(u.op()));
  }
  if (u.dtype() == dtypes::int32) v = wrap32(v);
  if (u.dtype() == dtypes::index &&
      (v > (static_cast<i128>(1) << 62) || v < -(static_cast<i128>(1) << 62)))
    throw Overflow{};  // index arithmetic is assumed not to overflow; skip such samples
  return memo[u.get()] = v;
}
i128 eval(const UOp& u, const Env& env) {
  std::map<const UOpNode*, i128> memo;
  return eval(u, env, memo);
}

struct Gen {
  std::mt19937_64 rng;
  DType dt;
  std::vector<UOp> vars;
  std::vector<std::pair<int64_t, int64_t>> ranges;

  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }
  UOp cnst(int64_t lo, int64_t hi) { return UOp::const_(dt, pick(lo, hi)); }
  UOp leaf() {
    return pick(0, 3) ? vars[static_cast<size_t>(pick(0, static_cast<int64_t>(vars.size()) - 1))]
                      : cnst(-12, 12);
  }
  UOp nonzero() {
    int64_t v = pick(1, 9);
    return UOp::const_(dt, pick(0, 3) ? v : -v);
  }

  UOp integer(int depth) {
    if (depth == 0 || pick(0, 9) < 2) return leaf();
    switch (pick(0, 11)) {
      case 0:
      case 1:
        return integer(depth - 1) + integer(depth - 1);
      case 2:
        return integer(depth - 1) - integer(depth - 1);
      case 3:
        return integer(depth - 1) * leaf();
      case 4:
        return integer(depth - 1) * cnst(-6, 6);
      case 5:
        return integer(depth - 1).idiv(nonzero());
      case 6:
        return integer(depth - 1) % nonzero();
      case 7:
        return integer(depth - 1).maximum(integer(depth - 1));
      case 8:
        return integer(depth - 1).minimum(integer(depth - 1));
      case 9:
        return boolean(depth - 1).where(integer(depth - 1), integer(depth - 1));
      case 10:
        return -integer(depth - 1);
      default: {  // through the other integer dtype and back: via int32 it may wrap
        UOp other = integer(depth - 1).cast(dt == dtypes::index ? dtypes::int32 : dtypes::index);
        return (other + other.const_like(pick(-3, 3))).cast(dt);
      }
    }
  }
  UOp boolean(int depth) {
    if (depth <= 0) return integer(1).lt(integer(1));
    switch (pick(0, 6)) {
      case 0:
      case 1:
        return integer(depth - 1).lt(integer(depth - 1));
      case 2:
        return integer(depth - 1).ne(integer(depth - 1));
      case 3:
        return integer(depth - 1).eq(integer(depth - 1));
      case 4:
        return boolean(depth - 1) & boolean(depth - 1);
      case 5:
        return boolean(depth - 1) | boolean(depth - 1);
      default:
        return boolean(depth - 1).logical_not();
    }
  }
  Env sample() {
    Env env;
    for (size_t i = 0; i < vars.size(); ++i) {
      // the ends of a range are where off-by-one rules fail, so they come up often
      const auto [lo, hi] = ranges[i];
      const int64_t v = pick(0, 3) == 0 ? lo : pick(0, 3) == 0 ? hi : pick(lo, hi);
      env[vars[i].arg()[0].get<std::string>()] = v;
    }
    return env;
  }
};

Gen make_gen(uint64_t seed, DType dt) {
  Gen g{std::mt19937_64(seed), dt, {}, {}};
  const char* names[] = {"a", "b", "c"};
  for (const char* n : names) {
    const int64_t lo = g.pick(0, 2) == 0 ? 0 : g.pick(-8, 8);  // index variables are usually >= 0
    const int64_t hi = lo + g.pick(0, 20);
    g.vars.push_back(UOp::variable(n, lo, hi, dt));
    g.ranges.emplace_back(lo, hi);
  }
  return g;
}

size_t property_cases() {
  const char* env = std::getenv("TINYT_PROPERTY_CASES");
  return env ? static_cast<size_t>(std::strtoull(env, nullptr, 10)) : 10000;
}

std::string show(const Env& env) {
  std::string s;
  for (auto& [k, v] : env) s += k + "=" + std::to_string(static_cast<int64_t>(v)) + " ";
  return s;
}
}  // namespace

TEST_CASE("symbolic: property: simplify is exact, idempotent, and its bounds hold") {
  const size_t cases = property_cases();
  size_t checked_points = 0;
  for (size_t i = 0; i < cases; ++i) {
    Gen g = make_gen(0x5eed0000 + i, i % 4 == 3 ? dtypes::int32 : dtypes::index);
    const UOp e = i % 5 == 4 ? g.boolean(3) : g.integer(4);
    const UOp s = simplify(e);
    INFO("case ", i, " (", e.dtype().name(), "): ", expr_string(e),
         "  simplified: ", expr_string(s), "\n", to_string(s));
    REQUIRE(simplify(s) == s);
    const Bounds be = bounds(e), bs = bounds(s);
    for (int k = 0; k < 12; ++k) {
      const Env env = g.sample();
      i128 ve, vs;
      try {
        ve = eval(e, env);
      } catch (Overflow&) {
        continue;
      }
      INFO("at ", show(env));
      vs = eval(s, env);
      REQUIRE(static_cast<int64_t>(ve) == static_cast<int64_t>(vs));
      REQUIRE(be.lo <= ve);
      REQUIRE(ve <= be.hi);
      REQUIRE(bs.lo <= vs);
      REQUIRE(vs <= bs.hi);
      ++checked_points;
    }
  }
  CHECK(checked_points > cases * 6);
}

TEST_CASE("symbolic: a mask's wrapping modulo unwraps exactly where the mask holds") {
  // a conv's input gradient: (iy + 12*ky) % 13 < 8 is 0 <= iy - ky < 8, where iy - ky is the row
  const UOp iy = Variable("iy", 0, 11), ky = Variable("ky", 0, 4), pos = iy + ky * 12;
  const auto [mask, row] = unwrap_mod_clauses(simplify((pos % 13).lt(8)), simplify(pos % 13 + pos.idiv(13) * 8));
  CHECK(mask == simplify(UOp::const_(dtypes::index, -1).lt(iy - ky) & (iy - ky).lt(8)));
  CHECK(row == simplify(iy - ky + ky * 8));
  // every X = p*u + q*v + k with (X % c) < b, at every point: the unwrapped mask holds exactly
  // where the original does, and there the modulos and divisions of X keep their values
  const UOp u = Variable("u", 0, 11), v = Variable("v", 0, 4), s = Variable("s", 0, 2);
  size_t unwrapped = 0, points = 0;
  for (int64_t c : {5, 13})
    for (int64_t b = 1; b < c; b += 2)
      for (int64_t p : {1, 3})
        for (int64_t q : {c - 1, c - 2, 2 * c - 1, int64_t{1}})
          for (int64_t k : {int64_t{0}, int64_t{2}, c}) {
            const UOp x = u * p + v * q + k, valid = simplify((x % c).lt(b));
            const UOp e = simplify((x % c) * 7 + (x * 3 + s).idiv(3 * c) * 100 + x.idiv(c) * 1000);
            const std::pair<UOp, UOp> mask_value = unwrap_mod_clauses(valid, e);
            const UOp& nv = mask_value.first;  // (not a structured binding: INFO's lambda captures it)
            const UOp& ne = mask_value.second;
            unwrapped += nv != valid;
            INFO("c ", c, " b ", b, " X ", expr_string(x), ": mask ", expr_string(nv), ", value ", expr_string(ne));
            for (int64_t iu = 0; iu <= 11; ++iu)
              for (int64_t iv = 0; iv <= 4; ++iv)
                for (int64_t is = 0; is <= 2; ++is) {
                  const Env env{{"u", iu}, {"v", iv}, {"s", is}};
                  REQUIRE(eval(nv, env) == eval(valid, env));
                  if (!eval(valid, env)) continue;
                  REQUIRE(eval(ne, env) == eval(e, env));
                  ++points;
                }
          }
  CHECK(unwrapped > 20);
  CHECK(points > 1000);
}

TEST_CASE("symbolic: property: simplification under a validity mask keeps valid values") {
  const size_t cases = property_cases() / 4;
  size_t valid_points = 0;
  for (size_t i = 0; i < cases; ++i) {
    Gen g = make_gen(0xa11d0000 + i, dtypes::index);
    // clauses like a padded view's: linear index compared with constants
    auto linear = [&] {
      return g.vars[0] * g.cnst(1, 4) + g.vars[1] * g.cnst(0, 2) + g.cnst(-6, 6);
    };
    UOp valid = linear().lt(g.cnst(-4, 20));
    if (g.pick(0, 1)) valid = valid & linear().lt(g.cnst(-4, 20)).logical_not();
    const UOp e = g.integer(3);
    const UOp s = uop_given_valid(valid, e);
    const UOp sv = simplify_valid(valid);
    INFO("case ", i, ": valid ", expr_string(valid), "  e ", expr_string(e),
         "  given valid: ", expr_string(s), "  valid simplified: ", expr_string(sv));
    for (int k = 0; k < 16; ++k) {
      const Env env = g.sample();
      INFO("at ", show(env));
      try {
        REQUIRE(eval(sv, env) == eval(valid, env));
        if (!eval(valid, env)) continue;
        REQUIRE(static_cast<int64_t>(eval(e, env)) == static_cast<int64_t>(eval(s, env)));
        ++valid_points;
      } catch (Overflow&) {
      }
    }
  }
  CHECK(valid_points > cases);
}

TEST_CASE("symbolic: data sums keep their sharing (no flattening blowup)") {
  // a = a + b; b = (b ^ a) + 1, sixteen times: each round adds two ADDs, whatever the rules do
  UOp a = UOp::variable("a", 0, 1000, dtypes::int32), b = UOp::variable("b", 0, 1000, dtypes::int32);
  for (int i = 0; i < 16; ++i) {
    a = a + b;
    b = (b ^ a) + 1;
  }
  size_t adds = 0;
  for (const UOp& u : toposort(simplify(a + b)))
    adds += u.op() == Ops::ADD;
  CHECK(adds <= 2 * 16 + 1);
}

TEST_CASE("symbolic: sums of loads from different buffers have one canonical order") {
  // distinct pointer dtypes once compared as equivalent, and the sum flipped forever
  UOp g1(Ops::DEFINE_GLOBAL, dtypes::index.ptr(3), {}, 1), g2(Ops::DEFINE_GLOBAL, dtypes::index.ptr(1), {}, 2);
  UOp a(Ops::LOAD, dtypes::index, {UOp(Ops::INDEX, g1.dtype(), {g1, UOp::const_(dtypes::index, 0)})});
  UOp b(Ops::LOAD, dtypes::index, {UOp(Ops::INDEX, g2.dtype(), {g2, UOp::const_(dtypes::index, 0)})});
  CHECK(simplify(a + b) == simplify(b + a));
}

TEST_CASE("symbolic: a cast's constant is not folded into a narrower source dtype") {
  // (int32)(int8 x) + 300 must not become (int32)(x + 44): 300 wraps in int8
  UOp x = UOp::variable("x", -128, 127, dtypes::int8);
  UOp e = x.cast(dtypes::int32) + 300;
  UOp s = simplify(e);
  for (int v : {-128, -1, 0, 127}) {
    UOp at = substitute(s, {{x.get(), UOp::const_(dtypes::int8, v)}});
    CHECK(simplify(at) == UOp::const_(dtypes::int32, v + 300));
  }
}
