// pattern.hpp: matching (orders, captures, args, dtypes), rule tables, and graph_rewrite's
// fixed point, memoization, depth and error behaviour.
#include <doctest/doctest.h>

#include <tinyt.hpp>
#include <tinyt/internals.hpp>

using namespace tinyt;

namespace {
bool matches(const UPat& p, const UOp& u) {
  Match m;
  return Matcher::match(p, u, m);
}
const PatternMatcher& add_zero() {
  static const PatternMatcher pm{{
      {UPat::var("x") + 0, [](auto& m) { return m["x"]; }},  // x+0 -> x
  }};
  return pm;
}
}  // namespace

TEST_CASE("pattern: commutative ops match their sources in either order") {
  UOp x = Variable("x", 0, 9), three = UOp::const_(dtypes::index, 3);
  UPat p = UPat::var("a") + UPat::cvar("c");
  CHECK(matches(p, x + three));
  CHECK(matches(p, three + x));
  CHECK_FALSE(matches(p, x + x));
  // IDIV is not commutative: the order is fixed
  UPat d = UPat::var("a") / UPat::cvar("c");
  CHECK(matches(d, x.idiv(three)));
  CHECK_FALSE(matches(d, three.idiv(x)));
}

TEST_CASE("pattern: captures bind nodes, and a name used twice must be the same node") {
  UOp x = Variable("x", 0, 9), y = Variable("y", 0, 9);
  UPat twice = UPat::var("a") + UPat::var("a");
  CHECK(matches(twice, x + x));
  CHECK_FALSE(matches(twice, x + y));
  Match m;
  REQUIRE(Matcher::match(UPat::var("a") * UPat::var("b"), (x + 1) * y, m));
  // either permutation is a valid binding; check the pair
  CHECK(((m["a"] == x + 1 && m["b"] == y) || (m["a"] == y && m["b"] == x + 1)));
  CHECK_THROWS_AS((void)m["nope"], RewriteError);
  // a failed permutation leaves no stale capture behind
  Match m2;
  UPat p = UPat(Ops::ADD, {UPat::var("a").lt(UPat::cvar()), UPat::var("a")}).any_order();
  UOp cond = x.lt(3).cast(dtypes::index);
  CHECK_FALSE(Matcher::match(p, cond + x, m2));
}

TEST_CASE("pattern: op sets, dtypes, args, constant values, any_len and each_src") {
  UOp x = Variable("x", 0, 9);
  UOp i = UOp::const_(dtypes::int32, 0), f = UOp::const_(dtypes::float32, 0.0),
      b = UOp::const_(dtypes::bool_, false);
  CHECK(matches(UPat::cnst(0), i));
  CHECK(matches(UPat::cnst(0), f));
  CHECK(matches(UPat::cnst(0), b));
  CHECK_FALSE(matches(UPat::cnst(1), f));
  CHECK(matches(UPat::var("v", {dtypes::float32}), f));
  CHECK_FALSE(matches(UPat::var("v", {dtypes::float32}), i));
  CHECK(matches(UPat::var("v", {dtypes::float32}),
                UOp::const_(dtypes::float32.vec(4), 1.0)));  // scalar of a vector
  CHECK(matches(UPat(Ops::DEFINE_VAR).arg(Arg{"x", 0, 9}), x));
  CHECK_FALSE(matches(UPat(Ops::DEFINE_VAR).arg(Arg{"x", 0, 8}), x));
  CHECK(matches(UPat(OpSet{Ops::ADD, Ops::MUL}), x * 2));
  UOp sink(Ops::SINK, dtypes::void_, {x, x + 1, x + 2});
  CHECK(matches(UPat(Ops::SINK, {UPat::var()}).any_len(), sink));
  CHECK_FALSE(matches(UPat(Ops::SINK, {UPat::var()}), sink));
  CHECK(matches(UPat(Ops::SINK).each_src(UPat(OpSet{Ops::DEFINE_VAR, Ops::ADD})), sink));
  CHECK_FALSE(matches(UPat(Ops::SINK).each_src(UPat(Ops::ADD)), sink));
}

TEST_CASE("pattern: rules apply to a fixed point and the first that applies wins") {
  UOp x = Variable("x", 0, 9);
  UOp e = ((x + 0) + 0) * 1 + 0;
  // *1 is not in this table, so it stays
  CHECK(graph_rewrite(e, add_zero()) == x * 1);
  PatternMatcher both =
      add_zero() + PatternMatcher{{{UPat::var("x") * 1, [](auto& m) { return m["x"]; }}}};
  CHECK(both.size() == 2);
  CHECK(graph_rewrite(e, both) == x);
  // a chain of rules: a -> b -> c; the result of a rewrite is rewritten again
  UOp a = Variable("a", 0, 1), b = Variable("b", 0, 1), c = Variable("c", 0, 1);
  PatternMatcher chain{{
      {UPat(Ops::DEFINE_VAR).arg(a.arg()), [b](auto&) { return b; }},
      {UPat(Ops::DEFINE_VAR).arg(b.arg()), [c](auto&) { return c; }},
  }};
  CHECK(graph_rewrite(a + 1, chain) == c + 1);
  CHECK(graph_rewrite(a + 1, chain, true) == c + 1);
}

TEST_CASE("pattern: a 100k-node chain is rewritten without overflowing the stack") {
  UOp x = Variable("x", 0, 9);
  UOp e = x;
  for (int i = 0; i < 100000; ++i) e = i % 2 ? e + 0 : e + 1;
  UOp expected = x;
  for (int i = 0; i < 50000; ++i) expected = expected + 1;
  CHECK(graph_rewrite(e, add_zero()) == expected);
  CHECK(graph_rewrite(e, add_zero(), true) == expected);
  // and the symbolic engine folds the whole chain to one sum
  CHECK(simplify(e) == x + 50000);
}

TEST_CASE("pattern: shared nodes are rewritten once and stay shared") {
  struct Counter {
    int calls = 0;
  } counter;
  UOp x = Variable("x", 0, 9);
  UOp shared = x + 0;
  UOp e = (shared * shared) + (shared * 3);
  PatternMatcher counting{{
      {UPat::var("x") + 0,
       [](auto& m) {
         ++m.template ctx<Counter>().calls;
         return m["x"];
       }},
  }};
  UOp out = graph_rewrite(e, counting, counter);
  CHECK(out == (x * x) + (x * 3));
  CHECK(counter.calls == 1);
  // in the result the two uses of x are one node
  CHECK(out.src(0).src(0).get() == out.src(1).src(0).get());
}

TEST_CASE("pattern: malformed rules and endless rewrites are errors") {
  UOp x = Variable("x", 0, 9), y = Variable("y", 0, 9);
  // a pattern with no op cannot be indexed
  CHECK_THROWS_AS((PatternMatcher{{{UPat::var("x"), [](auto& m) { return m["x"]; }}}}),
                  RewriteError);
  // a rule without a function
  CHECK_THROWS_AS((PatternMatcher{{{UPat(Ops::ADD), nullptr}}}), RewriteError);
  // asking for a name the pattern does not capture
  PatternMatcher bad_name{
      {{UPat(Ops::ADD, {UPat::var("a"), UPat::var("b")}), [](auto& m) { return m["c"]; }}}};
  CHECK_THROWS_AS(graph_rewrite(x + y, bad_name), RewriteError);
  // rules that undo each other forever
  PatternMatcher swap{{{UPat(Ops::ADD, {UPat::var("a"), UPat::var("b")}),
                        [](auto& m) { return m["b"] + m["a"]; }}}};
  CHECK_THROWS_AS(graph_rewrite(x + y, swap), RewriteError);
  CHECK_THROWS_AS(graph_rewrite(x + y, swap, true), RewriteError);
  // a context of the wrong type
  int wrong = 0;
  PatternMatcher wants_ctx{{{UPat(Ops::ADD), [](auto& m) {
                               return m.template ctx<std::string>().empty() ? UOp() : UOp();
                             }}}};
  CHECK_THROWS_AS(graph_rewrite(x + y, wants_ctx, wrong), RewriteError);
  // too many sources to try in every order
  std::vector<UPat> seven(7, UPat::var());
  CHECK_THROWS_AS(UPat(Ops::SINK, seven).any_order(), RewriteError);
}

TEST_CASE("pattern: bottom-up rewrites a node before its sources") {
  // bottom_up sees the (x+1)*2 before the x+1 below it could change
  UOp x = Variable("x", 0, 9);
  PatternMatcher pm{{
      {(UPat::var("a") + 1) * 2, [](auto& m) { return m["a"] * 5; }},
      {UPat::var("a") + 1, [](auto& m) { return m["a"] + 2; }},
  }};
  CHECK(graph_rewrite((x + 1) * 2, pm, true) == x * 5);
  CHECK(graph_rewrite((x + 1) * 2, pm) == (x + 2) * 2);
}
