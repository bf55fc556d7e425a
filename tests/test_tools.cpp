// The tools for seeing inside: the profiler's Chrome trace of a training step (read back as JSON
// and checked against the counters the engine keeps), DEBUG=2's table of kernels, and VIZ's page
// of rewrites and kernels.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <tinyt.hpp>
#include <tinyt/internals.hpp>

#include "helpers.hpp"

using namespace tinyt;
namespace json = tinyt::nn::json;

namespace {
std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

double number(const json::Value& v) {
  REQUIRE(v.kind == json::Value::Kind::number);
  return std::stod(v.text);
}

const json::Value& member(const json::Value& v, const char* key) {
  const json::Value* m = v.find(key);
  INFO("no member '", key, "'");
  REQUIRE(m != nullptr);
  return *m;
}

/// A small MLP's training step: forward, backward, Adam (the kernels of all three).
struct Mlp {
  nn::Linear l1{12, 24}, l2{24, 3};
};
TINYT_PARAMETERS(Mlp, l1, l2);
}  // namespace

TEST_CASE("profile: a training step's trace holds its schedules, codegen, compiles, launches and allocations") {
  tinyt_test::TempDir dir;
  Mlp net;
  nn::optim::Adam opt(nn::state::get_parameters(net), 0.01);
  const Tensor x = Tensor::rand({7, 12}).realize(), y = Tensor::rand({7, 3}).realize();
  profile::clear();
  GlobalCounters::reset();
  {
    const Context on{{"PROFILE", 1}};
    Tensor::Train train;
    opt.zero_grad();
    (net.l2(net.l1(x).relu()) - y).square().mean().backward();
    opt.step();
  }
  const int64_t launched = GlobalCounters::kernel_count.load(), compiled = GlobalCounters::compile_count.load();
  REQUIRE(launched > 5);
  profile::write((dir.path / "trace.json").string());
  const json::Value trace = json::parse(slurp(dir.path / "trace.json"), "trace.json");

  // process and thread names first; the host's process, then the device's
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> threads;
  std::map<std::string, std::vector<const json::Value*>> by_category;
  for (const json::Value& e : member(trace, "traceEvents").items) {
    const std::string phase = member(e, "ph").text;
    const int pid = static_cast<int>(number(member(e, "pid")));
    if (phase == "M") {
      const std::string name = member(member(e, "args"), "name").text;
      if (member(e, "name").text == "process_name") processes[pid] = name;
      else threads[{pid, static_cast<int>(number(member(e, "tid")))}] = name;
      continue;
    }
    CHECK(number(member(e, "ts")) >= 0);
    if (phase == "X") CHECK(number(member(e, "dur")) >= 0);
    by_category[member(e, "cat").text].push_back(&e);
  }
  CHECK(processes.at(1) == "host");
  const std::string device = Device::default_device();
  const auto process_of = [&](const json::Value& e) { return processes.at(static_cast<int>(number(member(e, "pid")))); };
  const auto thread_of = [&](const json::Value& e) {
    return threads.at({static_cast<int>(number(member(e, "pid"))), static_cast<int>(number(member(e, "tid")))});
  };

  // every launch is a span on the device's kernel track, with the estimates of its kernel
  const std::vector<const json::Value*>& kernels = by_category["kernels"];
  CHECK(static_cast<int64_t>(kernels.size()) == launched);
  std::set<std::string> kernel_names;
  for (const json::Value* k : kernels) {
    CHECK(process_of(*k) == device);
    CHECK(thread_of(*k) == "kernels");
    CHECK(number(member(member(*k, "args"), "bytes")) > 0);
    kernel_names.insert(member(*k, "name").text);
  }
  CHECK(kernel_names.size() > 3);

  // a codegen and a compile span per kernel compiled, on the host thread that compiled it, after
  // the schedule that asked for it
  CHECK(static_cast<int64_t>(by_category["codegen"].size()) == compiled);
  CHECK(static_cast<int64_t>(by_category["compile"].size()) == compiled);
  REQUIRE_FALSE(by_category["schedule"].empty());
  const double first_schedule = number(member(*by_category["schedule"].front(), "ts"));
  for (const char* category : {"codegen", "compile", "schedule"})
    for (const json::Value* span : by_category[category]) {
      CHECK(process_of(*span) == "host");
      CHECK(thread_of(*span).rfind("thread ", 0) == 0);
      CHECK(number(member(*span, "ts")) >= first_schedule);
    }
  for (const json::Value* span : by_category["codegen"]) {
    const std::string name = member(*span, "name").text;
    CHECK(kernel_names.count(name.substr(name.find(' ') + 1)) == 1);
  }

  // allocations name their sizes; the device's memory counter follows them
  int64_t allocated = 0, counters = 0;
  for (const json::Value* m : by_category["memory"]) {
    CHECK(process_of(*m) == device);
    const int64_t bytes = static_cast<int64_t>(number(member(member(*m, "args"), "bytes")));
    if (member(*m, "ph").text == "i" && member(*m, "name").text == "alloc") {
      CHECK(bytes > 0);
      allocated += bytes;
    }
    if (member(*m, "ph").text == "C") {
      CHECK(bytes >= 0);
      ++counters;
    }
  }
  CHECK(allocated > 0);
  CHECK(counters > 0);

  // a copy between devices is a span on the receiving device's copy track, with its size
  profile::clear();
  {
    const Context on{{"PROFILE", 1}};
    const std::string other = device == "CPU" ? "CL" : "CPU";  // make test installs PoCL: CL runs here
    x.to(other).realize();
    const std::vector<profile::Event> events = profile::events();
    const auto copy = std::find_if(events.begin(), events.end(), [](const profile::Event& e) { return e.track == "copies"; });
    REQUIRE(copy != events.end());
    CHECK(copy->process == other);
    CHECK(copy->phase == 'X');
    CHECK(std::find(copy->args.begin(), copy->args.end(), std::pair<std::string, std::string>("bytes", std::to_string(2 * 7 * 12 * 4))) !=
          copy->args.end());
  }

  // nothing is recorded with PROFILE off
  profile::clear();
  (x + 1).realize();
  CHECK(profile::events().empty());
}

TEST_CASE("profile: DEBUG=2 keeps each kernel's launches and time, the longest first") {
  const Tensor a = Tensor::rand({64, 48}).realize(), b = Tensor::rand({48, 32}).realize();
  profile::clear();
  GlobalCounters::reset();
  {
    const Context debug{{"DEBUG", 2}};
    for (int i = 0; i < 3; ++i) (a.matmul(b) + 1).relu().sum(1).realize();
  }
  const std::string table = profile::summary();
  INFO(table);
  std::istringstream lines(table);
  std::string header;
  std::getline(lines, header);
  CHECK(header.find("GFLOPS") != std::string::npos);
  std::vector<std::pair<std::string, double>> rows;  // name, ms
  int64_t launches = 0;
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name;
    int64_t n = 0;
    double ms = 0;
    fields >> name;
    if (name == "total") break;
    fields >> n >> ms;
    launches += n;
    rows.emplace_back(name, ms);
  }
  CHECK(launches == GlobalCounters::kernel_count.load());
  REQUIRE(rows.size() >= 1);
  for (size_t i = 1; i < rows.size(); ++i) CHECK(rows[i - 1].second >= rows[i].second);
  CHECK(line.find("total (" + std::to_string(rows.size()) + " kernels)") == 0);
}

namespace {
/// The JSON data inside a VIZ page.
json::Value page_data(const std::string& page) {
  const std::string open = "<script id=\"viz-data\" type=\"application/json\">";
  const size_t begin = page.find(open);
  REQUIRE(begin != std::string::npos);
  const size_t end = page.find("</script>", begin);
  REQUIRE(end != std::string::npos);
  return json::parse(page.substr(begin + open.size(), end - begin - open.size()), "the VIZ page's data");
}

/// The ids a node reaches in the page's node table.
std::set<int64_t> reached(const json::Value& nodes, int64_t root) {
  std::set<int64_t> seen;
  std::vector<int64_t> todo{root};
  while (!todo.empty()) {
    const int64_t id = todo.back();
    todo.pop_back();
    if (!seen.insert(id).second) continue;
    for (const json::Value& s : nodes.items.at(static_cast<size_t>(id)).items.at(3).items) todo.push_back(static_cast<int64_t>(number(s)));
  }
  return seen;
}
}  // namespace

TEST_CASE("viz: the page holds each rewrite's rules with the graph after each, and each kernel's AST and source") {
  tinyt_test::TempDir dir;
  const Tensor a = Tensor::rand({9, 5}).realize(), b = Tensor::rand({5, 7}).realize();
  viz::clear();
  {
    const Context on{{"VIZ", 1}};
    GlobalCounters::reset();
    ((a.matmul(b) + 1).relu() * 3).sum(1).realize();  // sizes seen nowhere else: compiled here
    CHECK(GlobalCounters::kernel_count.load() == 1);
  }
  viz::write((dir.path / "viz.html").string());
  const std::string page = slurp(dir.path / "viz.html");
  CHECK(page.rfind("<!doctype html>", 0) == 0);
  CHECK(page.find("http") == page.find("http://www.w3.org/2000/svg"));  // nothing fetched: the SVG namespace only
  const json::Value data = page_data(page);
  const json::Value& nodes = member(data, "nodes");
  // sources come before their users: each id names a node already in the table
  for (size_t i = 0; i < nodes.items.size(); ++i)
    for (const json::Value& s : nodes.items[i].items.at(3).items) REQUIRE(number(s) < static_cast<double>(i));
  const auto node_id = [&](const json::Value& v) {
    const auto id = static_cast<int64_t>(number(v));
    REQUIRE(id >= 0);
    REQUIRE(id < static_cast<int64_t>(nodes.items.size()));
    return id;
  };

  std::map<std::string, const json::Value*> groups;
  std::string kernel;
  for (const json::Value& g : member(data, "groups").items) {
    const std::string name = member(g, "name").text;
    groups[name] = &g;
    if (name.rfind("kernel ", 0) == 0) kernel = name.substr(7);
  }
  std::string names;
  for (const auto& [name, g] : groups) names += "'" + name + "' ";
  INFO("groups: ", names);
  REQUIRE(groups.size() == 2);
  REQUIRE(groups.count("schedule of 1 kernel(s)") == 1);
  REQUIRE(groups.count("kernel " + kernel) == 1);

  // rules fired (lowering the kernel, at least); each step's whole graph holds what the rule
  // gave, and its rule names its table, file and pattern
  size_t steps = 0;
  bool snapshot = false;
  for (const auto& [name, group] : groups)
    for (const json::Value& rw : member(*group, "rewrites").items) {
      snapshot |= name == "schedule of 1 kernel(s)" && member(rw, "name").text == "schedule: 1 kernel(s)";
      node_id(member(rw, "input"));
      node_id(member(rw, "output"));
      for (const json::Value& st : member(rw, "steps").items) {
        ++steps;
        const std::string rule = member(st, "rule").text;
        CHECK(rule.find("(tinyt/") != std::string::npos);
        CHECK(rule.find(" #") != std::string::npos);
        const int64_t after = node_id(member(st, "after"));
        node_id(member(st, "before"));
        CHECK(reached(nodes, node_id(member(st, "graph"))).count(after) == 1);
      }
    }
  CHECK(snapshot);
  CHECK(steps > 0);

  // the kernel: its AST (a SINK over its stores), the opts it got, its source
  const json::Value& lowering = *groups.at("kernel " + kernel);
  REQUIRE(member(lowering, "kernels").items.size() == 1);
  const json::Value& k = member(lowering, "kernels").items[0];
  CHECK(member(k, "name").text == kernel);
  CHECK(member(k, "device").text == Device::default_device());
  CHECK(member(k, "source").text.find(kernel) != std::string::npos);
  CHECK(nodes.items.at(static_cast<size_t>(node_id(member(k, "ast")))).items.at(0).text == "SINK");
  std::set<std::string> rewrites;
  for (const json::Value& rw : member(lowering, "rewrites").items) rewrites.insert(member(rw, "name").text.substr(0, member(rw, "name").text.find(" in ")));
  CHECK(rewrites.count("division_rules") == 1);

  // nothing is recorded with VIZ off
  viz::clear();
  ((a + 2) * b.sum()).realize();
  viz::write((dir.path / "empty.html").string());
  CHECK(member(page_data(slurp(dir.path / "empty.html")), "groups").items.empty());
}

TEST_CASE("viz: text in the page cannot end its script element, and headers are named from tinyt/ on") {
  const std::string quoted = viz::detail::script_safe("a</script><b>");
  CHECK(quoted.find("</") == std::string::npos);
  CHECK(json::parse(quoted, "quoted").text == "a</script><b>");
  CHECK(tinyt::detail::source_path("/src/include/tinyt/engine/../codegen/opt/x.hpp") == "tinyt/codegen/opt/x.hpp");
  CHECK(tinyt::detail::source_path("/usr/include/tinyt/a/b/../../c.hpp") == "tinyt/c.hpp");
  CHECK(tinyt::detail::source_path("elsewhere.hpp") == "elsewhere.hpp");
}

TEST_CASE("process replay: a graph as text reads back into the same graph, with every kind of arg") {
  using engine::replay::graph_text;
  using engine::replay::parse_graph;
  const UOp var = Variable("n", 1, 64);
  const UOp c = UOp::const_(dtypes::float32, -0.0);
  const UOp g = UOp(Ops::SINK, dtypes::void_,
                    {UOp(Ops::ADD, dtypes::float32, {c, UOp::const_(dtypes::float32, std::nan(""))}),
                     UOp(Ops::CONST, dtypes::float64, {}, std::numeric_limits<double>::infinity()),
                     UOp(Ops::NOOP, dtypes::int32.vec(4), {}, Arg::Tuple{Arg(true), Arg(), Arg(Ops::MUL), Arg(var), Arg::Tuple{Arg(int64_t{-7})}}),
                     UOp(Ops::NOOP, dtypes::uint8.ptr(32, AddrSpace::local), {var}, std::string("q\"u\\o\nte \xff\x01 end"))});
  const std::string text = graph_text(g);
  INFO(text);
  CHECK(parse_graph(text) == g);  // interned: the very same node
  CHECK(graph_text(parse_graph(text)) == text);

  const auto error_of = [](const std::string& t) { return tinyt_test::message_of<Error>([&] { parse_graph(t); }); };
  CHECK(error_of("").find("an empty graph") != std::string::npos);
  CHECK(error_of("0 CONST float32/1 [1] d0\n").find("source 1 is not defined yet") != std::string::npos);
  CHECK(error_of("0 FROB float32/1 [] ~\n").find("unknown op 'FROB'") != std::string::npos);
  CHECK(error_of("0 CONST float99/1 [] ~\n").find("unknown scalar type 'float99'") != std::string::npos);
  CHECK(error_of("0 CONST float32/1 [] s\"open\n").find("not closed") != std::string::npos);
  CHECK(error_of("0 CONST float32/1 [] (i1 i2\n").find("line 1") != std::string::npos);
}

TEST_CASE("process replay: each kernel compiled is recorded, and replaying it renders its source again") {
  tinyt_test::TempDir dir;
  const Tensor a = Tensor::rand({11, 6}).realize();
  // and a kernel whose lanes are masked vector accesses on LLVM (a 1x1 conv with a bias, its 9
  // tiles of channels padded to split over 2 threads; every other row of 13, so that its rows of 7
  // are loops of their own): what the target says must render them again
  const Tensor x = Tensor::rand({1, 64, 13, 7}).realize(), w = Tensor::rand({36, 64, 1, 1}).realize(), b = Tensor::rand({36}).realize();
  const Tensor conv = x.conv2d(w, b, 1, {2, 1});
  const UOp conv_ast = schedule::create_schedule({conv.uop()}).back().ast;
  bool masked = false;
  {
    const Context record{{"PROCESS_REPLAY", dir.path.string()}};
    realize_tensors({(a.exp2() * 3).sum(0), a.pad({{1, 2}, {0, 3}}).flip(0).max(1)});
    masked = compile_kernel(conv_ast, codegen::hand_coded_opts(conv_ast, {.threads = 2}))->source.find("@llvm.masked.") != std::string::npos;
  }
  CHECK(masked == (backend::device("CPU").target().language == backend::Language::llvm_ir));
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) files.push_back(e.path());
  REQUIRE(files.size() == 3);
  for (const auto& f : files) {
    CHECK(f.extension() == ".kernel");
    engine::replay::Record r = engine::replay::parse_record(slurp(f));
    INFO(r.name);
    CHECK(r.source.find(r.name) != std::string::npos);
    CHECK(r.target.language == backend::device(Device::default_device()).target().language);
    CHECK(engine::rerender(r) == r.source);
    CHECK(engine::replay::record_text(r) == slurp(f));
    // a different recorded source (as from another commit) no longer matches
    r.source += "// changed\n";
    CHECK(engine::rerender(r) != r.source);
  }
  CHECK(tinyt_test::message_of<Error>([] { engine::replay::parse_record("tinyt process replay 1\nname x\n"); }).find("process replay: expected 'target '") !=
        std::string::npos);
}
