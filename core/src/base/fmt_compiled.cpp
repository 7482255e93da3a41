// fmt's out-of-line half, compiled once for every target that links core. With
// FMT_HEADER_ONLY each of the ~110 files that format text compiled fmt's formatting engine
// again (about 3 s a file at -O3, a third of the clean build on two cores). Debian ships fmt
// only as a shared library, which the GPU machine lacks and which a process holding another
// fmt (PyTorch) should not meet, so the engine is built here from fmt's installed headers
// and hidden with the rest of core inside libgemmtune_runtime.so.
#include <fmt/format-inl.h>

// The templates fmt's headers declare and format-inl.h defines (four of them `extern template`
// in format.h): the one instantiation each of them has lives here.
FMT_BEGIN_NAMESPACE
namespace detail {
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);
}  // namespace detail
FMT_END_NAMESPACE
