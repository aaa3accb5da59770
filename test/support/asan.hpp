#pragma once
// MONGOLOCK_TEST_ASAN: 1 in a build under AddressSanitizer, else 0. GCC defines
// __SANITIZE_ADDRESS__; clang (the asan preset's compiler) answers __has_feature instead.
#if defined(__SANITIZE_ADDRESS__)
#define MONGOLOCK_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MONGOLOCK_TEST_ASAN 1
#endif
#endif
#ifndef MONGOLOCK_TEST_ASAN
#define MONGOLOCK_TEST_ASAN 0
#endif
