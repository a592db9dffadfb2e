// A fake XLA runtime for calling FFI handlers from a unit test: no XLA, no Python, no GPU.
//
//   jax_aiter::testing::CallFrame frame;                 // uses fake_api()
//   frame.arg(XLA_FFI_DataType_F32, {4, 8}, x).ret(XLA_FFI_DataType_F32, {4, 8}, y)
//        .attr("epsilon", 1e-6f);
//   auto r = jax_aiter::testing::call(my_handler, frame);   // r.ok(), r.code, r.message
//
// The API table fills only what a handler may use (errors, stream, device ordinal); every other
// entry is null, so a handler that starts using something new crashes loudly here instead of
// passing silently. Written against c_api.h only, for FFI API 0.3 (jaxlib 0.10) and 0.4 (0.11+).
#pragma once

#include <algorithm>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "xla/ffi/api/c_api.h"

namespace jax_aiter::testing {

// FFI 0.4 renamed the extension and context types; the call frame's fields name whichever exist.
using ExtensionBase = std::remove_pointer_t<decltype(XLA_FFI_CallFrame::extension_start)>;
using ExecutionContext = std::remove_pointer_t<decltype(XLA_FFI_CallFrame::ctx)>;

// What a fake XLA_FFI_Error* points to. Only the fake API creates and reads these.
struct FakeError {
  XLA_FFI_Error_Code code;
  std::string message;
};

inline FakeError* as_fake(XLA_FFI_Error* e) { return reinterpret_cast<FakeError*>(e); }

// What the fake answers for XLA_FFI_Stream_Get and XLA_FFI_DeviceOrdinal_Get.
struct FakeContext {
  void* stream = nullptr;
  int32_t device_ordinal = 0;
};

namespace detail {

inline XLA_FFI_Error* error_create(XLA_FFI_Error_Create_Args* args) {
  auto* e = new FakeError{args->errc, args->message ? args->message : ""};
  return reinterpret_cast<XLA_FFI_Error*>(e);
}

// Serves XLA_FFI_Error_GetMessage (FFI 0.3) and XLA_FFI_Error_GetDetails (0.4, which adds the
// code and still accepts the smaller 0.3 struct: the code is written only if the struct has it).
template <typename Args>
void error_get_details(Args* args) {
  const FakeError* e = as_fake(args->error);
  args->message = e->message.c_str();
  if constexpr (requires { args->errc; }) {
    if (args->struct_size >= offsetof(Args, errc) + sizeof(args->errc)) args->errc = e->code;
  }
}

inline void error_destroy(XLA_FFI_Error_Destroy_Args* args) { delete as_fake(args->error); }

inline const FakeContext* fake_context(ExecutionContext* ctx) {
  return reinterpret_cast<const FakeContext*>(ctx);
}

inline XLA_FFI_Error* no_context(const char* what) {
  XLA_FFI_Error_Create_Args args{};
  args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  args.errc = XLA_FFI_Error_Code_FAILED_PRECONDITION;
  const std::string message =
      std::string("fake_ffi: ") + what + ": the call frame has no FakeContext (CallFrame::context)";
  args.message = message.c_str();
  return error_create(&args);
}

inline XLA_FFI_Error* stream_get(XLA_FFI_Stream_Get_Args* args) {
  const FakeContext* c = fake_context(args->ctx);
  if (c == nullptr) return no_context("XLA_FFI_Stream_Get");
  args->stream = c->stream;
  return nullptr;
}

inline XLA_FFI_Error* device_ordinal_get(XLA_FFI_DeviceOrdinal_Get_Args* args) {
  const FakeContext* c = fake_context(args->ctx);
  if (c == nullptr) return no_context("XLA_FFI_DeviceOrdinal_Get");
  args->device_ordinal = c->device_ordinal;
  return nullptr;
}

}  // namespace detail

// A fresh table to modify (e.g. set XLA_FFI_Handler_Register for one test).
inline XLA_FFI_Api make_fake_api() {
  XLA_FFI_Api api{};  // every entry not named below stays null
  api.struct_size = XLA_FFI_Api_STRUCT_SIZE;
  api.api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
  api.api_version.major_version = XLA_FFI_API_MAJOR;
  api.api_version.minor_version = XLA_FFI_API_MINOR;
  api.XLA_FFI_Error_Create = &detail::error_create;
#if XLA_FFI_API_MAJOR == 0 && XLA_FFI_API_MINOR < 4
  api.XLA_FFI_Error_GetMessage = &detail::error_get_details<XLA_FFI_Error_GetMessage_Args>;
#else
  api.XLA_FFI_Error_GetDetails = &detail::error_get_details<XLA_FFI_Error_GetDetails_Args>;
#endif
  api.XLA_FFI_Error_Destroy = &detail::error_destroy;
  api.XLA_FFI_Stream_Get = &detail::stream_get;
  api.XLA_FFI_DeviceOrdinal_Get = &detail::device_ordinal_get;
  return api;
}

inline const XLA_FFI_Api* fake_api() {
  static const XLA_FFI_Api api = make_fake_api();
  return &api;
}

// The data type XLA uses for a scalar attribute of C++ type T (Python float is F64, int S64).
template <typename T>
inline constexpr XLA_FFI_DataType kScalarDType = XLA_FFI_DataType_INVALID;
// clang-format off
template <> inline constexpr XLA_FFI_DataType kScalarDType<bool> = XLA_FFI_DataType_PRED;
template <> inline constexpr XLA_FFI_DataType kScalarDType<int8_t> = XLA_FFI_DataType_S8;
template <> inline constexpr XLA_FFI_DataType kScalarDType<int16_t> = XLA_FFI_DataType_S16;
template <> inline constexpr XLA_FFI_DataType kScalarDType<int32_t> = XLA_FFI_DataType_S32;
template <> inline constexpr XLA_FFI_DataType kScalarDType<int64_t> = XLA_FFI_DataType_S64;
template <> inline constexpr XLA_FFI_DataType kScalarDType<uint8_t> = XLA_FFI_DataType_U8;
template <> inline constexpr XLA_FFI_DataType kScalarDType<uint16_t> = XLA_FFI_DataType_U16;
template <> inline constexpr XLA_FFI_DataType kScalarDType<uint32_t> = XLA_FFI_DataType_U32;
template <> inline constexpr XLA_FFI_DataType kScalarDType<uint64_t> = XLA_FFI_DataType_U64;
template <> inline constexpr XLA_FFI_DataType kScalarDType<float> = XLA_FFI_DataType_F32;
template <> inline constexpr XLA_FFI_DataType kScalarDType<double> = XLA_FFI_DataType_F64;
// clang-format on
template <>
inline constexpr XLA_FFI_DataType kScalarDType<std::complex<float>> = XLA_FFI_DataType_C64;
template <>
inline constexpr XLA_FFI_DataType kScalarDType<std::complex<double>> = XLA_FFI_DataType_C128;

// Builds an XLA_FFI_CallFrame the way XLA lays one out. Buffers are described, not owned: the
// data pointers must outlive the calls. get() returns a frame valid until the builder changes.
class CallFrame {
 public:
  explicit CallFrame(const XLA_FFI_Api* api = fake_api()) : api_(api) {}
  CallFrame(const CallFrame&) = delete;
  CallFrame& operator=(const CallFrame&) = delete;
  CallFrame(CallFrame&& o) noexcept { *this = std::move(o); }
  CallFrame& operator=(CallFrame&& o) noexcept {
    api_ = o.api_;
    args_ = std::move(o.args_);
    rets_ = std::move(o.rets_);
    attrs_ = std::move(o.attrs_);
    stage_ = o.stage_;
    ctx_ = o.ctx_;
    extension_ = o.extension_;
    dirty_ = true;  // the C view points into storage the move may have relocated
    return *this;
  }

  CallFrame& arg(XLA_FFI_DataType dtype, std::vector<int64_t> dims, const void* data) {
    args_.push_back({dtype, std::move(dims), const_cast<void*>(data)});
    return touch();
  }
  CallFrame& ret(XLA_FFI_DataType dtype, std::vector<int64_t> dims, void* data) {
    rets_.push_back({dtype, std::move(dims), data});
    return touch();
  }

  // A scalar attribute; one of the same name is replaced (XLA never sends duplicates).
  template <typename T>
  CallFrame& attr(std::string_view name, T value) {
    static_assert(kScalarDType<T> != XLA_FFI_DataType_INVALID,
                  "no XLA scalar type for T: use scalar_attr (or string_attr)");
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(Attr::value));
    return scalar_attr(name, kScalarDType<T>, &value, sizeof(T));
  }
  // A scalar of any XLA type given as its bytes (e.g. an F16 or BF16 attribute).
  CallFrame& scalar_attr(std::string_view name, XLA_FFI_DataType dtype, const void* bytes,
                         size_t size) {
    Attr& a = slot(name);
    a.type = XLA_FFI_AttrType_SCALAR;
    a.dtype = dtype;
    std::memset(a.value, 0, sizeof(a.value));
    std::memcpy(a.value, bytes, std::min(size, sizeof(a.value)));
    return touch();
  }
  CallFrame& string_attr(std::string_view name, std::string_view value) {
    Attr& a = slot(name);
    a.type = XLA_FFI_AttrType_STRING;
    a.text = std::string(value);
    return touch();
  }
  CallFrame& remove_attr(std::string_view name) {
    std::erase_if(attrs_, [&](const Attr& a) { return a.name == name; });
    return touch();
  }

  CallFrame& stage(XLA_FFI_ExecutionStage s) {
    stage_ = s;
    return touch();
  }
  // What XLA_FFI_Stream_Get / XLA_FFI_DeviceOrdinal_Get answer; without one they fail.
  CallFrame& context(FakeContext* ctx) {
    ctx_ = ctx;
    return touch();
  }
  // E.g. the metadata extension of the registration handshake (see handshake() below).
  CallFrame& extension(ExtensionBase* ext) {
    extension_ = ext;
    return touch();
  }

  const XLA_FFI_Api* api() const { return api_; }

  XLA_FFI_CallFrame* get() {
    if (dirty_) build();
    return &frame_;
  }

 private:
  struct Buffer {
    XLA_FFI_DataType dtype;
    std::vector<int64_t> dims;
    void* data;
  };
  struct Attr {
    std::string name;
    XLA_FFI_AttrType type = XLA_FFI_AttrType_SCALAR;
    XLA_FFI_DataType dtype = XLA_FFI_DataType_INVALID;
    alignas(16) unsigned char value[16] = {};
    std::string text;
  };

  CallFrame& touch() {
    dirty_ = true;
    return *this;
  }

  Attr& slot(std::string_view name) {
    for (Attr& a : attrs_) {
      if (a.name == name) return a;
    }
    attrs_.push_back({});
    attrs_.back().name = std::string(name);
    return attrs_.back();
  }

  static void view(std::vector<Buffer>& in, std::vector<XLA_FFI_Buffer>& out) {
    out.clear();
    for (Buffer& b : in) {
      XLA_FFI_Buffer c{};
      c.struct_size = XLA_FFI_Buffer_STRUCT_SIZE;
      c.dtype = b.dtype;
      c.data = b.data;
      c.rank = static_cast<int64_t>(b.dims.size());
      c.dims = b.dims.data();
      out.push_back(c);
    }
  }

  void build() {
    view(args_, arg_bufs_);
    arg_types_.assign(args_.size(), XLA_FFI_ArgType_BUFFER);
    arg_ptrs_.clear();
    for (XLA_FFI_Buffer& b : arg_bufs_) arg_ptrs_.push_back(&b);

    view(rets_, ret_bufs_);
    ret_types_.assign(rets_.size(), XLA_FFI_RetType_BUFFER);
    ret_ptrs_.clear();
    for (XLA_FFI_Buffer& b : ret_bufs_) ret_ptrs_.push_back(&b);

    // XLA passes attributes sorted by name; handlers look them up by their sorted position.
    // A stable insertion sort: a handful of attributes, and no temporary buffer (libstdc++'s
    // stable_sort uses the deprecated get_temporary_buffer, which clang-22 warns about).
    for (size_t i = 1; i < attrs_.size(); ++i) {
      for (size_t j = i; j > 0 && attrs_[j].name < attrs_[j - 1].name; --j) {
        std::swap(attrs_[j], attrs_[j - 1]);
      }
    }
    const size_t n = attrs_.size();
    attr_types_.resize(n);
    name_spans_.resize(n);
    name_ptrs_.resize(n);
    scalars_.resize(n);
    strings_.resize(n);
    attr_ptrs_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      Attr& a = attrs_[i];
      attr_types_[i] = a.type;
      name_spans_[i] = {a.name.data(), a.name.size()};
      name_ptrs_[i] = &name_spans_[i];
      if (a.type == XLA_FFI_AttrType_STRING) {
        strings_[i] = {a.text.data(), a.text.size()};
        attr_ptrs_[i] = &strings_[i];
      } else {
        scalars_[i] = {a.dtype, a.value};
        attr_ptrs_[i] = &scalars_[i];
      }
    }

    frame_ = XLA_FFI_CallFrame{};
    frame_.struct_size = XLA_FFI_CallFrame_STRUCT_SIZE;
    frame_.extension_start = extension_;
    frame_.api = api_;
    frame_.ctx = reinterpret_cast<ExecutionContext*>(ctx_);
    frame_.stage = stage_;
    frame_.args = {XLA_FFI_Args_STRUCT_SIZE, nullptr, static_cast<int64_t>(args_.size()),
                   arg_types_.data(), arg_ptrs_.data()};
    frame_.rets = {XLA_FFI_Rets_STRUCT_SIZE, nullptr, static_cast<int64_t>(rets_.size()),
                   ret_types_.data(), ret_ptrs_.data()};
    frame_.attrs = {XLA_FFI_Attrs_STRUCT_SIZE, nullptr,           static_cast<int64_t>(n),
                    attr_types_.data(),        name_ptrs_.data(), attr_ptrs_.data()};
    frame_.future = nullptr;
    dirty_ = false;
  }

  const XLA_FFI_Api* api_ = nullptr;
  std::vector<Buffer> args_, rets_;
  std::vector<Attr> attrs_;
  XLA_FFI_ExecutionStage stage_ = XLA_FFI_ExecutionStage_EXECUTE;
  FakeContext* ctx_ = nullptr;
  ExtensionBase* extension_ = nullptr;

  // The C view, rebuilt by get() after a change.
  bool dirty_ = true;
  std::vector<XLA_FFI_Buffer> arg_bufs_, ret_bufs_;
  std::vector<XLA_FFI_ArgType> arg_types_;
  std::vector<XLA_FFI_RetType> ret_types_;
  std::vector<void*> arg_ptrs_, ret_ptrs_;
  std::vector<XLA_FFI_AttrType> attr_types_;
  std::vector<XLA_FFI_ByteSpan> name_spans_;
  std::vector<XLA_FFI_ByteSpan*> name_ptrs_;
  std::vector<XLA_FFI_Scalar> scalars_;
  std::vector<XLA_FFI_ByteSpan> strings_;
  std::vector<void*> attr_ptrs_;
  XLA_FFI_CallFrame frame_{};
};

// A handler's answer: OK, or the code and message of the error it returned (already destroyed).
struct CallResult {
  XLA_FFI_Error_Code code = XLA_FFI_Error_Code_OK;
  std::string message;

  bool ok() const { return code == XLA_FFI_Error_Code_OK; }
};

// So gtest prints the message when an assertion on a CallResult fails.
inline void PrintTo(const CallResult& r, std::ostream* os) {
  *os << "{code " << static_cast<int>(r.code) << ", \"" << r.message << "\"}";
}

// Takes ownership of an error the fake API created (nullptr is OK).
inline CallResult take(const XLA_FFI_Api* api, XLA_FFI_Error* error) {
  if (error == nullptr) return {};
  CallResult r{as_fake(error)->code, as_fake(error)->message};
  XLA_FFI_Error_Destroy_Args args{};
  args.struct_size = XLA_FFI_Error_Destroy_Args_STRUCT_SIZE;
  args.error = error;
  api->XLA_FFI_Error_Destroy(&args);
  return r;
}

inline CallResult call(XLA_FFI_Handler* handler, CallFrame& frame) {
  return take(frame.api(), handler(frame.get()));
}

// The registration handshake: XLA calls a handler with the metadata extension and reads back the
// FFI version its headers had and its traits.
struct Handshake {
  CallResult result;
  XLA_FFI_Metadata metadata;
};

inline Handshake handshake(XLA_FFI_Handler* handler, const XLA_FFI_Api* api = fake_api()) {
  Handshake h{};
  h.metadata.struct_size = XLA_FFI_Metadata_STRUCT_SIZE;
  h.metadata.api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
  h.metadata.api_version.major_version = -1;  // so "not written" cannot pass for the right answer
  h.metadata.api_version.minor_version = -1;
  h.metadata.traits = ~XLA_FFI_Handler_Traits{0};
  XLA_FFI_Metadata_Extension ext{};
  ext.extension_base.struct_size = XLA_FFI_Metadata_Extension_STRUCT_SIZE;
  ext.extension_base.type = XLA_FFI_Extension_Metadata;
  ext.extension_base.next = nullptr;
  ext.metadata = &h.metadata;
  CallFrame frame(api);
  frame.extension(&ext.extension_base);
  h.result = call(handler, frame);
  return h;
}

// A fake XLA_FFI_Handler_Register that records what it is given: set it in a copy of the API
// (api.XLA_FFI_Handler_Register = &record_registration) and read registrations() afterwards.
struct Registration {
  std::string name;
  std::string platform;
  XLA_FFI_Handler_Bundle bundle;
  XLA_FFI_Handler_Traits traits;
};

inline std::vector<Registration>& registrations() {
  static std::vector<Registration> log;  // tests run on one thread
  return log;
}

inline XLA_FFI_Error* record_registration(XLA_FFI_Handler_Register_Args* args) {
  registrations().push_back({std::string(args->name.ptr, args->name.len),
                             std::string(args->platform.ptr, args->platform.len), args->bundle,
                             args->traits});
  return nullptr;
}

}  // namespace jax_aiter::testing
