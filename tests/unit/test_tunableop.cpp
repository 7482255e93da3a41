// PyTorch TunableOp results files (`gemmtune export --format tunableop`): the signatures
// PyTorch builds for row-major tensors, the solution names, the validators, what is left out
// and why, the cublaslt parameter order against the plugin's own space (its stand-in build),
// and the command end to end on a store, with its bad input. CPU only.
#include "base/errors.hpp"
#include "build/plugin.hpp"
#include "store/store.hpp"
#include "test_util.hpp"
#include "table/tunableop.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

using namespace gt;
namespace fs = std::filesystem;

namespace {

const PluginRegistry& standin_registry() {
  static PluginRegistry reg = PluginRegistry::load({test::plugin_dir() / "cublaslt" / "standin"});
  return reg;
}
const Family& standin() { return standin_registry().get("cublaslt"); }

std::string key_of(const Problem& p) {
  std::string why;
  auto k = tunableop_key(p, &why);
  return k ? k->op + " " + k->params : "refused: " + why;
}

// A cublaslt row the way a tune stores it: a config of the plugin's space (the stand-in's),
// its name, provenance of one device.
StoredRow cublaslt_row(const Problem& p, double time_us, const std::string& device = "NVIDIA H200",
                       const std::string& arch = "sm_90") {
  const Family& f = standin();
  gt_device d = arch_limits("sm_90");
  Space s = f.space(p, d);
  auto picks = f.suggest(p, d, 4, s.dims());
  REQUIRE_FALSE(picks.empty());
  StoredRow r;
  r.problem = p;
  r.family = "cublaslt";
  r.config = picks.front();
  r.config_name = s.name(r.config);
  r.config_hash = hex64(s.hash(r.config));
  r.m.status = Status::ok;
  r.m.time = summarize({time_us * 0.99, time_us, time_us * 1.01});
  r.prov.device_name = device;
  r.prov.arch = arch;
  r.prov.family = "cublaslt";
  r.prov.family_version = f.version();
  r.prov.library = f.provenance();
  return r;
}

}  // namespace

TEST_CASE("tunableop: the keys PyTorch builds for row-major tensors", "[tunableop]") {
  // cuBLAS computes C^T = B^T A^T: its m is our N, its first operand our B.
  CHECK(key_of(Problem::make(16, 8, 32, DType::bf16, DType::bf16, Layout::nn)) ==
        "GemmTunableOp_BFloat16_NN nn_8_16_32_ld_8_32_8");
  CHECK(key_of(Problem::make(8, 16, 32, DType::bf16, DType::bf16, Layout::nn)) ==
        "GemmTunableOp_BFloat16_NN nn_16_8_32_ld_16_32_16");
  // nt: B is a transposed view (x @ W.t(), as nn.Linear multiplies): cuBLAS's first operand is transposed.
  CHECK(key_of(Problem::make(8, 16, 32, DType::f16, DType::f16, Layout::nt)) ==
        "GemmTunableOp_Half_TN tn_16_8_32_ld_32_32_16");
  CHECK(key_of(Problem::make(8, 16, 32, DType::f16, DType::f16, Layout::tn)) ==
        "GemmTunableOp_Half_NT nt_16_8_32_ld_16_8_16");
  CHECK(key_of(Problem::make(8, 16, 32, DType::f32, DType::f32, Layout::tt)) ==
        "GemmTunableOp_float_TT tt_16_8_32_ld_32_8_16");
  CHECK(key_of(Problem::make(8, 16, 32, DType::tf32, DType::f32, Layout::nn)) ==
        "GemmTunableOp_tf32_NN nn_16_8_32_ld_16_32_16");
  // Decode: M = 1 row-major is fine.
  CHECK(key_of(Problem::make(1, 4096, 4096, DType::bf16, DType::bf16, Layout::nn)) ==
        "GemmTunableOp_BFloat16_NN nn_4096_1_4096_ld_4096_4096_4096");
}

TEST_CASE("tunableop: problems PyTorch keys otherwise are refused, saying why", "[tunableop]") {
  CHECK_THAT(key_of(Problem::make(8, 16, 32, DType::f16, DType::f32, Layout::nn)),
             Catch::Contains("writes C as f32 from f16 inputs"));
  Problem padded = Problem::make(8, 16, 32, DType::bf16, DType::bf16, Layout::nn);
  padded.lda = 40;
  padded.align = alignment_of(padded);
  CHECK_THAT(key_of(padded), Catch::Contains("lda=40 ldb=16 ldc=16, not the tight ones"));
  Problem unaligned = Problem::make(8, 16, 32, DType::bf16, DType::bf16, Layout::nn);
  unaligned.align = 2;
  CHECK_THAT(key_of(unaligned), Catch::Contains("tuned for 2-byte alignment"));
  // A transposed view of a 1-row (or K = 1) matrix is contiguous: PyTorch passes it as not transposed.
  CHECK_THAT(key_of(Problem::make(1, 16, 32, DType::bf16, DType::bf16, Layout::tn)), Catch::Contains("size of 1"));
  CHECK_THAT(key_of(Problem::make(8, 16, 1, DType::bf16, DType::bf16, Layout::nt)), Catch::Contains("size of 1"));
}

TEST_CASE("tunableop: solution names, devices and the torch version", "[tunableop]") {
  CublasltAlgo a;
  a.id = 66;
  a.tile = 17;
  a.stages = 22;
  a.split_k = 2;
  a.reduction = 4;
  a.swizzle = 1;
  a.custom = 7;
  a.cluster = 3;
  a.inner = 0;
  CHECK(tunableop_solution(a) == "Gemm_Cublaslt_id_66_tile_17_stages_22_splitk_2_red_4_swizzle_1_custom_7_inner_0_cluster_3");
  CHECK(tunableop_device("NVIDIA H200", "sm_90") == "9.0:NVIDIA H200");
  CHECK(tunableop_device("NVIDIA B200", "sm_100a") == "10.0:NVIDIA B200");
  CHECK(tunableop_device("NVIDIA L4", "sm_89") == "8.9:NVIDIA L4");
  CHECK_FALSE(tunableop_device("x", "compute_90"));

  std::string note;
  CHECK(tunableop_torch_version("2.15.0", &note) == "2.15.0");
  CHECK(note.empty());
  CHECK(tunableop_torch_version("2.15.0+cu132", &note) == "2.15.0");
  CHECK_THAT(note, Catch::Contains("PT_VERSION is '2.15.0'"));
  CHECK(tunableop_torch_version("2.16.0a0", nullptr) == "2.16.0a0");
  CHECK_THROWS_WITH(tunableop_torch_version("2.13.1", nullptr), Catch::Contains("came with PyTorch 2.14"));
  CHECK_THROWS_WITH(tunableop_torch_version("latest", nullptr), Catch::Contains("is not a PyTorch version"));
}

TEST_CASE("tunableop: the cublaslt parameters are read in the plugin's own order", "[tunableop][plugins]") {
  const Family& f = standin();
  Problem p = Problem::make(64, 4096, 4096, DType::bf16, DType::bf16, Layout::nn);
  gt_device d = arch_limits("sm_90");
  Space s = f.space(p, d);
  REQUIRE(s.dims() == std::size(kCublasltParams));
  for (size_t i = 0; i < s.dims(); ++i) CHECK(s.params()[i].name == kCublasltParams[i]);
  int checked = 0;
  for (const Config& c : f.suggest(p, d, 8, s.dims())) {
    std::string why;
    auto a = cublaslt_algo_of(c, s.name(c), f.version(), &why);
    REQUIRE(a);
    CHECK(tunableop_solution(*a) == fmt::format("Gemm_Cublaslt_id_{}_tile_{}_stages_{}_splitk_{}_red_{}_swizzle_{}_"
                                                "custom_{}_inner_{}_cluster_{}",
                                                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[8], c[7]));
    ++checked;
  }
  CHECK(checked > 0);
  Config c = f.suggest(p, d, 1, s.dims()).front();
  std::string why;
  CHECK_FALSE(cublaslt_algo_of(c, s.name(c), "2.0", &why));
  CHECK_THAT(why, Catch::Contains("not 1.x"));
  Config swapped = c;
  std::swap(swapped[0], swapped[3]);  // algo and split_k out of place
  CHECK_FALSE(cublaslt_algo_of(swapped, s.name(c), f.version(), &why));
  CHECK_THAT(why, Catch::Contains("does not spell its values"));
  CHECK_FALSE(cublaslt_algo_of(Config(c.begin(), c.end() - 1), s.name(c), f.version(), &why));
  CHECK_THAT(why, Catch::Contains("has 9 values"));
}

TEST_CASE("tunableop: the file, its validators and what is left out", "[tunableop]") {
  std::vector<StoredRow> rows = {cublaslt_row(Problem::make(1, 4096, 4096, DType::bf16, DType::bf16, Layout::nn), 14.5),
                                 cublaslt_row(Problem::make(64, 4096, 4096, DType::bf16, DType::bf16, Layout::nt), 30),
                                 cublaslt_row(Problem::make(8, 16, 32, DType::f16, DType::f32, Layout::nn), 2)};
  TunableOpOptions o;
  o.torch_version = "2.15.0";
  TunableOpFile f = tunableop_file(rows, o);
  std::string version = rows[0].prov.family_version.substr(rows[0].prov.family_version.find("cublasLt") + 8);
  auto sol = [&](const StoredRow& r) {
    return tunableop_solution(*cublaslt_algo_of(r.config, r.config_name, r.prov.family_version, nullptr));
  };
  CHECK(f.text == fmt::format("Validator,PT_VERSION,2.15.0\nValidator,CUBLASLT_VERSION,{}\n"
                              "Validator,CUDA_DEVICE,9.0:NVIDIA H200\n"
                              "GemmTunableOp_BFloat16_NN,nn_4096_1_4096_ld_4096_4096_4096,{},0.0145\n"
                              "GemmTunableOp_BFloat16_TN,tn_4096_64_4096_ld_4096_4096_4096,{},0.03\n",
                              version, sol(rows[0]), sol(rows[1])));
  CHECK(f.lines == 2);
  REQUIRE_FALSE(f.notes.empty());
  CHECK_THAT(f.notes[0], Catch::Contains("left out NVIDIA H200 8x16x32 f16>f32 nn a16: writes C as f32"));
  {
    // A transformed winner: TunableOp re-creates an algorithm for PyTorch's own problem, it cannot pad or swap.
    std::vector<StoredRow> with = rows;
    StoredRow padded = cublaslt_row(Problem::make(64, 4097, 4096, DType::bf16, DType::bf16, Layout::nn), 40);
    padded.transform = Transform::pad;
    padded.config_name = transformed_name(padded.config_name, Transform::pad);
    with.push_back(padded);
    TunableOpFile g = tunableop_file(with, o);
    CHECK(g.text == f.text);
    std::string all;
    for (auto& n : g.notes) all += n + "\n";
    CHECK_THAT(all, Catch::Contains("left out NVIDIA H200 64x4097x4096 bf16>bf16 nn a2: its cuBLASLt winner") &&
                        Catch::Contains("runs through the transform 'pad', which a TunableOp file cannot express"));
  }

  o.cublaslt_version = "130401";
  f = tunableop_file(rows, o);
  CHECK_THAT(f.text, Catch::Contains("Validator,CUBLASLT_VERSION,130401\n"));
  std::string notes;
  for (auto& n : f.notes) notes += n + "\n";
  CHECK_THAT(notes, Catch::Contains("the file claims cuBLASLt 130401; the algorithms were tuned with " + version));

  rows.push_back(cublaslt_row(Problem::make(2, 4096, 4096, DType::bf16, DType::bf16, Layout::nn), 20, "NVIDIA H100"));
  CHECK_THROWS_WITH(tunableop_file(rows, o), Catch::Contains("one file serves one device; the rows have "
                                                              "'9.0:NVIDIA H100' (1 row), '9.0:NVIDIA H200' (2 rows)"));
  CHECK_THROWS_WITH(tunableop_file({rows[2]}, o), Catch::Contains("no cuBLASLt result can be written"));
  o.torch_version.clear();
  CHECK_THROWS_AS(tunableop_file(rows, o), InputError);
}

TEST_CASE("tunableop: gemmtune export --format tunableop on a store", "[tunableop][cli]") {
  test::TempDir dir;
  fs::path db = dir.path / "results.db";
  StoredRow winner = cublaslt_row(Problem::make(1, 4096, 4096, DType::bf16, DType::bf16, Layout::nn), 14.5);
  StoredRow other = cublaslt_row(Problem::make(1, 4096, 4096, DType::bf16, DType::bf16, Layout::nn), 9.0);
  other.config = standin().suggest(other.problem, arch_limits("sm_90"), 4, 10).back();
  other.config_name = standin().space(other.problem, arch_limits("sm_90")).name(other.config);
  StoredRow unrecorded = cublaslt_row(Problem::make(32, 4096, 4096, DType::bf16, DType::bf16, Layout::nn), 20);
  {
    Store s = Store::open(db);
    s.insert(winner);
    s.insert(other);  // faster, but not the recorded winner: the winner counts
    s.insert(unrecorded);
    s.set_winner(winner.key(), "cublaslt", winner.config_name, winner.id);
  }
  std::string before = test::read_file(db);
  std::string cli = fmt::format("GEMMTUNE_PLUGIN_PATH={} {} --db {}", (test::plugin_dir() / "cublaslt" / "standin").string(),
                                test::gemmtune_binary().string(), db.string());
  fs::path out = dir.path / "tunableop_results0.csv";
  auto r = test::run_command(fmt::format("{} export --format tunableop --torch-version 2.15.0+cu132 -o {} 2>&1", cli,
                                         out.string()));
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("exported 2 cuBLASLt results from"));
  CHECK_THAT(r.out, Catch::Contains("PT_VERSION is '2.15.0'"));
  std::string text = test::read_file(out);
  CHECK_THAT(text, Catch::StartsWith("Validator,PT_VERSION,2.15.0\nValidator,CUBLASLT_VERSION,"));
  auto sol = [](const StoredRow& x) {
    return tunableop_solution(*cublaslt_algo_of(x.config, x.config_name, x.prov.family_version, nullptr));
  };
  CHECK_THAT(text, Catch::Contains("GemmTunableOp_BFloat16_NN,nn_4096_1_4096_ld_4096_4096_4096," + sol(winner) + ",0.0145\n"));
  CHECK_THAT(text, Catch::Contains("GemmTunableOp_BFloat16_NN,nn_4096_32_4096_ld_4096_4096_4096," + sol(unrecorded) + ",0.02\n"));

  // Bad input: exit 2, the flag named, the store as it was.
  for (auto [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"export --format tunableop", "--torch-version: --format tunableop needs the version"},
           {"export --format tunableop --torch-version 2.13.0", "came with PyTorch 2.14"},
           {"export --format tunableop --torch-version 2.15.0 --cublaslt-version 13.1", "--cublaslt-version: '13.1'"},
           {"export --torch-version 2.15.0", "--torch-version is for --format tunableop"},
           {"export --format tunableop --torch-version 2.15.0 -o " + db.string(), "is the results store"},
           {"export --format tunableop --torch-version 2.15.0 --device 'NVIDIA H100'", "no cuBLASLt result can be written"},
           {"export --format tsv", "expected toml, json, csv, cpp or tunableop"}}) {
    auto bad = test::run_command(cli + " " + args + " 2>&1");
    INFO(args << "\n" << bad.out);
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.out, Catch::Contains(says));
  }
  CHECK(test::read_file(db) == before);
}

TEST_CASE("tunableop: FP8 rows are torch._scaled_mm's ScaledGemmTunableOp keys, from PyTorch 2.15 on", "[tunableop][fp8]") {
  const Problem row = Problem::make(64, 4096, 4096, DType::e4m3, DType::bf16, Layout::nt, std::nullopt, ScaleMode::row);
  std::string why;
  auto k = tunableop_scaled_key(row, false, &why);
  REQUIRE(k);
  // cuBLAS's a is mat2 (our B, N x K, its m = our N); row scales are RowWise (1) on both.
  CHECK(k->op == "ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_BFloat16_TN");
  CHECK(k->params ==
        "tn_4096_64_4096_ld_4096_4096_4096_a_Float8_e4m3fn_b_Float8_e4m3fn_c_BFloat16_as_Float_bs_Float_ast_1_bst_1_"
        "dscale_0_fast_0_bias_None");
  // Block scales: 128x128 on the weights (cuBLAS's a, BlockWise128x128 = 5), 1x128 on the activations (4);
  // mixed types name mat1's type first; fast accumulation is in the key.
  const Problem blk = Problem::make(256, 512, 1024, DType::e4m3, DType::f32, Layout::nt, DType::e5m2, ScaleMode::block);
  auto kb = tunableop_scaled_key(blk, true, &why);
  REQUIRE(kb);
  CHECK(kb->op == "ScaledGemmTunableOp_Float8_e4m3fn_Float8_e5m2_float_TN");
  CHECK_THAT(kb->params, Catch::Contains("_a_Float8_e5m2_b_Float8_e4m3fn_c_float_") &&
                             Catch::Contains("_ast_5_bst_4_dscale_0_fast_1_bias_None"));
  // An FP8 output carries its D scale.
  auto kd = tunableop_scaled_key(Problem::make(64, 64, 64, DType::e4m3, DType::e4m3, Layout::nt), false, &why);
  REQUIRE(kd);
  CHECK_THAT(kd->params, Catch::Contains("_ast_0_bst_0_dscale_1_"));
  CHECK(torch_at_least("2.15.0", 2, 15));
  CHECK(torch_at_least("3.0.0a0", 2, 15));
  CHECK_FALSE(torch_at_least("2.14.1", 2, 15));

  // In a file: written for 2.15, left out (saying why) for 2.14.
  std::vector<StoredRow> rows = {cublaslt_row(row, 21.5),
                                 cublaslt_row(Problem::make(1, 4096, 4096, DType::bf16, DType::bf16, Layout::nn), 14.5)};
  TunableOpFile f15 = tunableop_file(rows, {"2.15.0", ""});
  CHECK(f15.lines == 2);
  CHECK_THAT(f15.text, Catch::Contains("ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_BFloat16_TN,tn_4096_64_4096_ld_"));
  CHECK_THAT(f15.text, Catch::Contains(",Gemm_Cublaslt_id_66_"));
  TunableOpFile f14 = tunableop_file(rows, {"2.14.0", ""});
  CHECK(f14.lines == 1);
  REQUIRE_FALSE(f14.notes.empty());
  CHECK_THAT(f14.notes.front(), Catch::Contains("PyTorch 2.14.0's TunableOp has no cuBLASLt algorithms for "
                                                "torch._scaled_mm") && Catch::Contains("2.15 has"));
  CHECK_THROWS_WITH(tunableop_file({rows[0]}, {"2.14.0", ""}), Catch::Contains("no cuBLASLt result can be written") &&
                                                                     Catch::Contains("torch._scaled_mm"));
}
