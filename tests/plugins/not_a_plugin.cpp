// A valid shared library without the entry symbol.
extern "C" __attribute__((visibility("default"))) int some_other_function() { return 42; }
