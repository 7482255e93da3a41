#include "base/errors.hpp"
#include "base/problem.hpp"
#include "measure/roofs.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

using namespace gt;

TEST_CASE("shapes parse and bad shapes are refused with the reason", "[problem]") {
  auto d = parse_shape("4096x2048x7");
  CHECK(d[0] == 4096);
  CHECK(d[1] == 2048);
  CHECK(d[2] == 7);
  CHECK(parse_shape("1X1X1")[2] == 1);
  auto msg = [](const char* s) {
    try {
      parse_shape(s);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(msg("0x4x4"), Catch::Contains("M is 0"));
  CHECK_THAT(msg("4x-4x4"), Catch::Contains("N = -4 is negative"));
  CHECK_THAT(msg("4xabcx4"), Catch::Contains("not a whole number"));
  CHECK_THAT(msg("4x4"), Catch::Contains("not a shape"));
  CHECK_THAT(msg("4x4x4x4"), Catch::Contains("not a whole number"));
  CHECK_THAT(msg("4x4x2147483648"), Catch::Contains("too large"));
  CHECK_THAT(msg("4x4x99999999999999999999999"), Catch::Contains("too large"));
  CHECK_THAT(msg("4x4x"), Catch::Contains("K is empty"));
  CHECK(msg("2147483647x1x1") == "accepted");
}

TEST_CASE("dtype and layout names", "[problem]") {
  CHECK(parse_dtype("bf16") == DType::bf16);
  CHECK(parse_layout("tn") == Layout::tn);
  CHECK_THROWS_AS(parse_dtype("fp8"), InputError);
  CHECK_THROWS_WITH(parse_layout("xx"), Catch::Contains("unknown layout 'xx'"));
}

TEST_CASE("tight leading dimensions follow the layout", "[problem]") {
  Problem p = Problem::make(100, 200, 300, DType::f16, DType::f16, Layout::tn);
  CHECK(p.lda == 100);  // A stored K×M
  CHECK(p.ldb == 200);  // B stored K×N
  CHECK(p.ldc == 200);
  CHECK(p.bytes_a() == 300u * 100 * 2);
  Problem q = Problem::make(100, 200, 300, DType::f32, DType::f32, Layout::nt);
  CHECK(q.lda == 300);
  CHECK(q.ldb == 300);  // B stored N×K
  CHECK(q.flops() == 2.0 * 100 * 200 * 300);
}

TEST_CASE("alignment is the largest power of two dividing every ld*size and pointer", "[problem]") {
  CHECK(Problem::make(4096, 4096, 4096, DType::f16, DType::f16, Layout::nn).align == 16);
  CHECK(Problem::make(4097, 4097, 4097, DType::f16, DType::f16, Layout::nn).align == 2);
  CHECK(Problem::make(4100, 4100, 4100, DType::f16, DType::f16, Layout::nn).align == 8);
  CHECK(Problem::make(4097, 4097, 4097, DType::f32, DType::f32, Layout::nn).align == 4);
  CHECK(Problem::make(4096, 4096, 4098, DType::f16, DType::f16, Layout::nn).align == 4);  // lda = K
  Problem p = Problem::make(64, 64, 64, DType::f32, DType::f32, Layout::nn);
  CHECK(alignment_of(p, 0x1000, 0x1008, 0x2000) == 8);
  CHECK(p.key() == "64x64x64 f32>f32 nn a16");
}

TEST_CASE("the roofline at a problem: the lower of the compute roof and intensity x memory roof", "[problem]") {
  using Bound = Roofline::Bound;
  // 4096^3 bf16: 2*4096^3 FLOP over 3 * 4096^2 * 2 bytes = 1365.3 FLOP per byte: compute-bound.
  Problem sq = Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16, Layout::nn);
  Roofline r = roofline_at(sq, 700e12, 4.5e12);
  CHECK(r.intensity == Approx(4096.0 / 3));
  CHECK(r.flops_per_s == 700e12);
  CHECK(r.bound == Bound::compute);
  // 1x4096x4096 bf16: 2*4096^2 FLOP over (4096 + 4096^2 + 4096) * 2 bytes, just under 1.
  Problem gemv = Problem::make(1, 4096, 4096, DType::bf16, DType::bf16, Layout::nn);
  r = roofline_at(gemv, 700e12, 4.5e12);
  CHECK(r.intensity == Approx(2.0 * 4096 * 4096 / (2.0 * (4096 + 4096.0 * 4096 + 4096))));
  CHECK(r.flops_per_s == Approx(4.5e12 * r.intensity));
  CHECK(r.bound == Bound::memory);
  CHECK(std::string(to_string(r.bound)) == "memory");
  // Padding is not traffic: the same problem with wider leading dimensions has the same roofline.
  Problem padded = gemv;
  padded.lda += 64;
  padded.ldb += 64;
  padded.ldc += 64;
  CHECK(roofline_at(padded, 700e12, 4.5e12).intensity == r.intensity);
  // Without a memory roof the compute roof alone, bound unknown; without a compute roof
  // nothing (a memory roof alone would rate a compute-bound problem against a rate no kernel
  // reaches); neither: nothing.
  double nan = std::nan("");
  r = roofline_at(gemv, 700e12, nan);
  CHECK(r.flops_per_s == 700e12);
  CHECK(r.bound == Bound::unknown);
  r = roofline_at(sq, nan, 4.5e12);
  CHECK(std::isnan(r.flops_per_s));
  CHECK(r.bound == Bound::unknown);
  CHECK(std::isnan(roofline_at(gemv, nan, nan).flops_per_s));
}

TEST_CASE("FP8 problems: keys, scale counts, refusals and the GPUs that run them", "[problem][fp8]") {
  Problem p = Problem::make(4096, 4096, 4097, DType::e4m3, DType::bf16, Layout::nt, std::nullopt, ScaleMode::row);
  CHECK(p.key() == "4096x4096x4097 e4m3>bf16 nt a1 row");  // K = 4097 bytes a row: 1-byte aligned
  CHECK(p.scale_count_a() == 4096);
  CHECK(p.scale_count_b() == 4096);
  Problem blk = Problem::make(300, 1000, 1000, DType::e4m3, DType::f32, Layout::nt, DType::e5m2, ScaleMode::block);
  CHECK(blk.key() == "300x1000x1000 e4m3:e5m2>f32 nt a8 block");
  CHECK(blk.scale_count_a() == 300 * 8);            // ceil(1000 / 128) = 8 blocks of 1x128 per row of A
  CHECK(blk.scale_count_b() == 8 * 8);              // 8 row blocks of B, each with KB rounded up to 4: 8
  CHECK(block_scale_stride(1000) == 8);
  CHECK(block_scale_stride(129) == 4);              // 2 blocks, rows of 4
  CHECK(Problem::make(16, 16, 16, DType::e4m3, DType::bf16, Layout::nt).scale == ScaleMode::tensor);
  CHECK(Problem::default_out(DType::e5m2) == DType::bf16);
  CHECK(parse_in_types("e4m3:e5m2") == std::pair{DType::e4m3, DType::e5m2});
  CHECK(in_types_text(DType::e5m2, DType::e4m3) == "e5m2:e4m3");
  CHECK_THROWS_WITH(parse_in_types("e5m2:e5m2", "--dtype"), Catch::Contains("--dtype: 'e5m2:e5m2'") &&
                                                              Catch::Contains("make one operand e4m3"));
  CHECK_THROWS_WITH(parse_in_types("f16:bf16"), Catch::Contains("only FP8 operands may differ"));
  CHECK_THROWS_WITH(Problem::make(16, 16, 16, DType::e4m3, DType::bf16, Layout::tn),
                    Catch::Contains("layout nt") && Catch::Contains("not tn"));
  CHECK_THROWS_WITH(Problem::make(16, 16, 16, DType::e4m3, DType::e4m3, Layout::nt, std::nullopt, ScaleMode::block),
                    Catch::Contains("an FP8 output (e4m3) takes tensor scales only, not block"));
  CHECK_THROWS_WITH(Problem::make(16, 16, 16, DType::bf16, DType::bf16, Layout::nt, std::nullopt, ScaleMode::row),
                    Catch::Contains("scale mode row is for FP8 inputs"));
  CHECK_THROWS_WITH(Problem::make(16, 16, 16, DType::bf16, DType::e4m3, Layout::nt),
                    Catch::Contains("an FP8 output (e4m3) needs FP8 inputs"));
  // The GPUs: FP8 from sm_89; row and block scales on Hopper only.
  Problem tensor = Problem::make(16, 16, 16, DType::e4m3, DType::bf16, Layout::nt);
  CHECK_THAT(*fp8_device_refusal(tensor, 8, 0), Catch::Contains("compute capability 8.9 or newer") &&
                                                   Catch::Contains("this one is 8.0"));
  CHECK_FALSE(fp8_device_refusal(tensor, 8, 9));
  CHECK_FALSE(fp8_device_refusal(p, 9, 0));
  CHECK_THAT(*fp8_device_refusal(p, 8, 9), Catch::Contains("row scales run on Hopper (compute capability 9.0) only"));
  CHECK_THAT(*fp8_device_refusal(blk, 10, 0), Catch::Contains("block scales run on Hopper"));
  CHECK_FALSE(fp8_device_refusal(Problem::make(16, 16, 16, DType::bf16, DType::bf16, Layout::nn), 7, 0));
  // JSON carries B's type and the scale mode only where they say something.
  nlohmann::json j = blk;
  CHECK(j["in_b"] == "e5m2");
  CHECK(j["scale"] == "block");
  CHECK(j.get<Problem>().key() == blk.key());
  nlohmann::json plain = Problem::make(16, 16, 16, DType::bf16, DType::bf16, Layout::nn);
  CHECK_FALSE(plain.contains("in_b"));
  CHECK_FALSE(plain.contains("scale"));
}

// Plugin ABI v4's per-operand alignment (gt_problem.align_a, align_b, align_c): which operand
// is misaligned, so that a family can write a misaligned C in place while TMA reads A and B.
TEST_CASE("each operand's own alignment: its leading dimension and what is known of its pointer", "[problem][abi]") {
  // The LM head 1024x50257x768 nt: A's and B's rows are 768 elements (16 bytes), C's 50257 (2).
  const Problem head = Problem::make(1024, 50257, 768, DType::bf16, DType::bf16, Layout::nt);
  gt_problem g = head.abi();
  CHECK(g.align_bytes == 2);
  CHECK(g.align_a == 16);
  CHECK(g.align_b == 16);
  CHECK(g.align_c == 2);
  // An f32 C of odd ldc: 4 bytes; a 16-bit one of ldc 2 mod 4 (pairs fit, 16 bytes do not): 4.
  CHECK(Problem::make(64, 63, 64, DType::f32, DType::f32, Layout::nt).abi().align_c == 4);
  CHECK(Problem::make(64, 66, 64, DType::bf16, DType::bf16, Layout::nt).abi().align_c == 4);
  // A's ld odd (nn: lda = K = 4097): A alone.
  g = Problem::make(64, 64, 4097, DType::f16, DType::f16, Layout::nn).abi();
  CHECK(g.align_a == 2);
  CHECK(g.align_b == 16);
  CHECK(g.align_c == 16);

  // Pointers as the runtime takes them from a call (each operand's own), 2 bytes off.
  auto with_pointers = [](Problem p, uintptr_t a, uintptr_t b, uintptr_t c) {
    p.align = alignment_of(p, a, b, c);
    p.pointer_align = alignment_of_pointers(a, b, c);
    p.operand_pointer_align = {alignment_of_pointers(a, 0, 0), alignment_of_pointers(b, 0, 0),
                               alignment_of_pointers(c, 0, 0)};
    return p;
  };
  const Problem square = Problem::make(256, 1024, 512, DType::bf16, DType::bf16, Layout::nt);
  g = with_pointers(square, 0x10000, 0x20000, 0x30002).abi();
  CHECK(g.align_bytes == 2);
  CHECK(g.align_a == 16);
  CHECK(g.align_b == 16);
  CHECK(g.align_c == 2);
  g = with_pointers(square, 0x10002, 0x20000, 0x30000).abi();
  CHECK(g.align_bytes == 2);
  CHECK(g.align_a == 2);
  CHECK(g.align_b == 16);
  CHECK(g.align_c == 16);
  g = with_pointers(head, 0x10000, 0x20008, 0x30000).abi();  // B 8 bytes off, C's ld 2
  CHECK(g.align_a == 16);
  CHECK(g.align_b == 8);
  CHECK(g.align_c == 2);

  // Pointers not known per operand: a key less aligned than its leading dimensions explain says
  // some pointer is misaligned, not which, so each operand is taken to be (a table entry's key).
  Problem key_only = square;
  key_only.align = 4;
  g = key_only.abi();
  CHECK(g.align_a == 4);
  CHECK(g.align_b == 4);
  CHECK(g.align_c == 4);
  Problem all_pointers = square;  // pointer_align alone: every pointer
  all_pointers.pointer_align = 8;
  all_pointers.align = 8;
  CHECK(all_pointers.abi().align_b == 8);
  // Never below the key's alignment, which is their least.
  for (const Problem& p : {head, key_only, all_pointers, with_pointers(head, 0x10002, 0x20000, 0x30000)}) {
    g = p.abi();
    CHECK(std::min({g.align_a, g.align_b, g.align_c}) == g.align_bytes);
  }
}
