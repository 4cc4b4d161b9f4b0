// The doctest main of every test executable (tests/CMakeLists.txt: pushonce_doctest_main).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
