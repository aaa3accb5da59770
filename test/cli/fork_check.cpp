// LD_PRELOAD shim for cli_test.sh. `mongolock` is multi-threaded (libmongoc workers), so between
// fork() and exec its child may only call async-signal-safe functions: another thread may have
// held the allocator's or the environment's lock at the moment of fork. This shim watches the
// child of every fork() in a process named `mongolock` and, if it calls malloc, setenv or execvp
// (whose PATH search allocates) before exec, says so on stderr and exits 99.
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
}

namespace {

bool watching = false;  // true only in a forked child of `mongolock`, until exec replaces it

std::size_t length(const char* s) {
  std::size_t n = 0;
  while (s[n]) ++n;
  return n;
}

void check(const char* function) {
  if (!watching) return;
  const char* parts[] = {"fork_check: ", function, " called between fork and exec\n"};
  for (const char* p : parts) [[maybe_unused]] auto n = ::write(2, p, length(p));
  ::_exit(99);
}

bool is_mongolock() {  // COMMAND inherits the shim and may call anything after its own forks
  const char* name = program_invocation_short_name;
  const char* want = "mongolock";
  while (*name && *name == *want) ++name, ++want;
  return *name == 0 && *want == 0;
}

__attribute__((constructor)) void install() {
  if (is_mongolock()) ::pthread_atfork(nullptr, nullptr, [] { watching = true; });
}

template <class Fn>
Fn next(const char* symbol) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, symbol));
}

}  // namespace

extern "C" {

void* malloc(std::size_t n) noexcept {
  check("malloc");
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t size) noexcept {
  check("calloc");
  return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t n) noexcept {
  check("realloc");
  return __libc_realloc(p, n);
}
int setenv(const char* name, const char* value, int overwrite) noexcept {
  check("setenv");
  static auto real = next<int (*)(const char*, const char*, int)>("setenv");
  return real(name, value, overwrite);
}
int putenv(char* entry) noexcept {
  check("putenv");
  static auto real = next<int (*)(char*)>("putenv");
  return real(entry);
}
int execvp(const char* file, char* const argv[]) noexcept {
  check("execvp");
  static auto real = next<int (*)(const char*, char* const[])>("execvp");
  return real(file, argv);
}
int execvpe(const char* file, char* const argv[], char* const envp[]) noexcept {
  check("execvpe");
  static auto real = next<int (*)(const char*, char* const[], char* const[])>("execvpe");
  return real(file, argv, envp);
}

}  // extern "C"
