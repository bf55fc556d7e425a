// The one file of a program that compiles tinyt from the single header.
#define TINYT_IMPLEMENTATION
#include <tinyt.hpp>
