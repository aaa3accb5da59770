#pragma once
// What a simulation puts in place of the machine on one thread (docs/design.md section 11,
// "Virtual time"): the source of the library's time (time_source.hpp) or randomness
// (random_source.hpp) installed there, or null, and the scope that installs one.
namespace mongolock::detail {

template <class Source>
class installed {
 public:
  // The source installed on this thread, or null: the machine's.
  static Source* get() noexcept { return current_; }

  // Installs `s` on this thread for the scope's life (the previous one back after it).
  class scope {
   public:
    explicit scope(Source* s) noexcept : previous_(current_) { current_ = s; }
    ~scope() { current_ = previous_; }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

   private:
    Source* previous_;
  };

 private:
  static inline thread_local Source* current_ = nullptr;
};

}  // namespace mongolock::detail
