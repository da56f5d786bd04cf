// Status and Result<T>: the one error type of gpuwasm.
//
// Every call that a guest, a file, the network or a device can make fail returns a Status (or a
// Result<T> carrying either a value or a Status). No exceptions cross a module boundary. A Status
// is a small value: a code plus a human-readable message. Codes are coarse and stable (callers
// branch on them); messages are for people and say what failed and why.
//
// Thread-safety: Status and Result are plain values; distinct objects may be used concurrently.
#pragma once

#include <cassert>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace gpuwasm {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,    // malformed input: bad wasm, bad PTX, bad flag value
  kNotFound,           // a named thing (function, kernel, file) does not exist
  kAlreadyExists,      // a name or handle is taken
  kPermissionDenied,   // the caller may not do this (capability off, wrong tenant)
  kResourceExhausted,  // a quota or limit would be exceeded
  kUnavailable,        // busy or overloaded: try again later
  kDeadlineExceeded,   // the deadline passed
  kOutOfRange,         // offset/length outside an object
  kUnsupported,        // valid request this build or device cannot do
  kDeviceFault,        // the device reported a fault; its state for the caller is lost
  kCancelled,          // stopped on request (interrupt, shutdown)
  kIoError,            // the operating system said no (file, socket, process)
  kInternal,           // a bug in gpuwasm
};

// Stable lower-case name of a code ("invalid_argument"); used in logs and JSON errors.
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status PermissionDenied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
  static Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
  static Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
  static Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status DeviceFault(std::string m) { return {StatusCode::kDeviceFault, std::move(m)}; }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid_argument: <message>", or "ok".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; the code is kept. OK stays OK.
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status&, const Status&) = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

std::ostream& operator<<(std::ostream& os, const Status& s);

// Result<T>: a T, or the Status saying why there is none. Never holds an OK status.
template <typename T>
class [[nodiscard]] Result {  // NOLINT(bugprone-exception-escape): moves throw only if T's do
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design, like std::expected
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status");
    if (std::get<Status>(v_).ok()) v_ = Status::Internal("Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  // Precondition for value()/operator*: ok().
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // The error; Status::Ok() when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  T value_or(T fallback) const& { return ok() ? std::get<T>(v_) : std::move(fallback); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace gpuwasm

// Returns early from the enclosing function when `expr` (a Status) is not OK.
#define GPUWASM_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::gpuwasm::Status gpuwasm_status_ = (expr);        \
    if (!gpuwasm_status_.ok()) return gpuwasm_status_; \
  } while (0)

#define GPUWASM_CONCAT_INNER(a, b) a##b
#define GPUWASM_CONCAT(a, b) GPUWASM_CONCAT_INNER(a, b)

// `GPUWASM_ASSIGN_OR_RETURN(auto x, MakeX());` binds the value or returns the error.
#define GPUWASM_ASSIGN_OR_RETURN(decl, expr)                                                                      \
  auto GPUWASM_CONCAT(gpuwasm_result_, __LINE__) = (expr);                                                        \
  if (!GPUWASM_CONCAT(gpuwasm_result_, __LINE__).ok()) return GPUWASM_CONCAT(gpuwasm_result_, __LINE__).status(); \
  decl = std::move(GPUWASM_CONCAT(gpuwasm_result_, __LINE__)).value()
