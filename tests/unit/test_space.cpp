#include "base/space.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace gt;

static Space demo() {
  Space s("demo", "1.0",
          {Param{"bm", "", {32, 64, 128}, {}, 1}, Param{"mode", "", {0, 1}, {"fast", "slow"}, 0},
           Param{"k_tile", "", {8, 16}, {}, 0}});
  s.add_constraint([](const Config& c) -> std::optional<std::string> {
    if (c[0] == 128 && c[2] == 16) return std::string("bm=128 with k_tile=16 needs too much shared memory");
    return std::nullopt;
  });
  return s;
}

TEST_CASE("lazy indexed enumeration round-trips", "[space]") {
  Space s = demo();
  REQUIRE(s.raw_size() == 12);
  std::set<std::string> names;
  for (uint64_t i = 0; i < s.raw_size(); ++i) {
    Config c = s.at(i);
    CHECK(s.index_of(c) == i);
    names.insert(s.name(c));
  }
  CHECK(names.size() == 12);
  CHECK(s.count_valid() == 10);
}

TEST_CASE("a huge space is never materialised", "[space]") {
  std::vector<Param> ps;
  for (int i = 0; i < 7; ++i) ps.push_back(Param{"p" + std::to_string(i), "", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {}, 0});
  Space s("big", "1", ps);
  CHECK(s.raw_size() == 10000000ull);
  Config c = s.at(9876543);
  CHECK(c == Config{9, 8, 7, 6, 5, 4, 3});
}

TEST_CASE("constraints give their reason", "[space]") {
  Space s = demo();
  auto why = s.check({128, 0, 16});
  REQUIRE(why);
  CHECK_THAT(*why, Catch::Contains("shared memory"));
  CHECK_FALSE(s.check({64, 1, 16}));
  CHECK_THAT(*s.check({65, 0, 8}), Catch::Contains("bm=65 is not one of its values"));
  CHECK_THAT(*s.check({64, 0}), Catch::Contains("2 values"));
}

TEST_CASE("neighbours step one parameter by one position", "[space]") {
  Space s = demo();
  auto n = s.neighbours({64, 0, 8});
  CHECK(n.size() == 4);  // bm down, bm up, mode up, k_tile up
  auto ends = s.neighbours({32, 0, 8});
  CHECK(ends.size() == 3);
}

TEST_CASE("canonical names spell the config and parse back", "[space]") {
  Space s = demo();
  Config c{128, 1, 8};
  CHECK(s.name(c) == "demo_bm128_modeslow_k_tile8");
  std::string err;
  auto back = s.parse("demo_bm128_modeslow_k_tile8", &err);
  REQUIRE(back);
  CHECK(*back == c);
  auto kv = s.parse("mode=slow,bm=128", &err);
  REQUIRE(kv);
  CHECK(*kv == c);  // k_tile keeps its default (8)
  CHECK_FALSE(s.parse("bm=7", &err));
  CHECK_THAT(err, Catch::Contains("not one of its values (32, 64, 128)"));
  CHECK_FALSE(s.parse("tile=7", &err));
  CHECK_THAT(err, Catch::Contains("no parameter 'tile'"));
  CHECK_FALSE(s.parse("other_bm128", &err));
  CHECK(s.assignments(c) == "bm=128,mode=slow,k_tile=8");
}

TEST_CASE("the readable form is what tables print, and it parses back", "[space]") {
  Space s = demo();
  Config c{128, 1, 8};
  CHECK(s.readable(c) == "bm=128 mode=slow k_tile=8");
  std::string err;
  auto back = s.parse(s.readable(c), &err);
  REQUIRE(back);
  CHECK(*back == c);
  auto mixed = s.parse("mode=slow, bm=128", &err);  // commas and spaces together
  REQUIRE(mixed);
  CHECK(*mixed == c);
  // From the canonical name and the parameter names alone (no space at hand: a library family
  // without a GPU); names that contain '_' are matched whole.
  const std::vector<std::string> names = {"bm", "mode", "k_tile"};
  CHECK(assignments_from_name(s.name(c), "demo", names) == std::optional<std::string>("bm=128,mode=slow,k_tile=8"));
  CHECK_FALSE(assignments_from_name(s.name(c), "other", names));
  CHECK_FALSE(assignments_from_name("demo_bm128_k_tile8", "demo", names));  // mode is missing
  CHECK(readable_assignments("a=1,b=2x3") == "a=1 b=2x3");
}

TEST_CASE("hashes are stable across runs and machines", "[space]") {
  Space s = demo();
  // The hash is XXH3 of a fixed text: a changed value here means every stored row breaks.
  CHECK(hex64(stable_hash("gemmtune")) == hex64(stable_hash(std::string("gemm") + "tune")));
  CHECK(s.hash({64, 0, 8}) != s.hash({64, 0, 16}));
  Space other("demo", "2.0", s.params());
  CHECK(s.hash({64, 0, 8}) != other.hash({64, 0, 8}));
  CHECK(hex64(stable_hash("abc")) == "78af5f94892f3950");
}
