// One template turns (op, backend) into an XLA FFI handler:
//   decode (Spec::bind / Spec::params) -> Op::validate -> Op::plan -> Backend::launch, in order,
// every failure an ffi::Error naming the op and operand, never an exception or an abort.
// An initialize-stage handler loads the op's module for the device before execution (and before
// any command-buffer capture), so execute only launches.
//
// An FFI spec describes how an op meets XLA (see ffi/rmsnorm.hpp):
//   template <> struct FfiSpec<ops::RmsNorm> {
//     static auto bind(auto binding);                 // .Arg<>/.Ret<>/.Attr<> in call order
//     static Expected<ops::RmsNorm::Params> params(decoded operands...);
//   };
#pragma once

#include <exception>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/ffi/context.hpp"
#include "jax_aiter/ffi/error.hpp"
#include "jax_aiter/ffi/registry.hpp"
#include "jax_aiter/runtime/backend.hpp"
#include "xla/ffi/api/ffi.h"

namespace jax_aiter::ffi {

template <typename Op>
struct FfiSpec;  // specialised per op in ffi/<op>.hpp

template <typename Op, typename Backend>
struct Handler {
  using Spec = FfiSpec<Op>;
  using Module = typename Op::Module;

  static constexpr XLA_FFI_Handler_Traits kTraits =
      Backend::kCommandBufferCompatible ? XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE : 0;

  // validate -> plan -> launch; the part of execute that knows nothing of XLA.
  static Status run(const Where<Backend>& where, const typename Op::Params& params) {
    auto target = Backend::target(where.device);
    if (!target) return target.status();
    JAX_AITER_RETURN_IF_ERROR(Op::validate(params, *target));
    const typename Op::Plan plan = Op::plan(params, *target);
    for (const kernels::Launch& launch : plan.launches.view()) {
      JAX_AITER_RETURN_IF_ERROR(
          Backend::template launch<Module>(where.device, where.stream, launch));
    }
    return {};
  }

  static XLA_FFI_Error* execute(XLA_FFI_CallFrame* frame) {
    static auto* handler =
        bind_with_traits(Spec::bind(xffi::Ffi::Bind().Ctx<Where<Backend>>()),
                         [](Where<Backend> where, auto... operands) -> xffi::Error {
                           return guarded([&]() -> Status {
                             auto params = Spec::params(operands...);
                             if (!params) return params.status();
                             return run(where, *params);
                           });
                         });
    return name_decoding_error(frame, handler->Call(frame));
  }

  static XLA_FFI_Error* initialize(XLA_FFI_CallFrame* frame) {
    static auto* handler =
        bind_with_traits(xffi::Ffi::Bind<xffi::ExecutionStage::kInitialize>().Ctx<Where<Backend>>(),
                         [](Where<Backend> where) -> xffi::Error {
                           return guarded([&]() -> Status {
                             auto target = Backend::target(where.device);
                             if (!target) return target.status();
                             return Backend::template prepare<Module>(where.device);
                           });
                         });
    return name_decoding_error(frame, handler->Call(frame));
  }

  static constexpr XLA_FFI_Handler_Bundle bundle() {
    // Designated: FFI 0.4 appends members to the bundle.
    return XLA_FFI_Handler_Bundle{
        .instantiate = nullptr, .prepare = nullptr, .initialize = &initialize, .execute = &execute};
  }

 private:
  // XLA's own decoder reports bad operands without saying which op; our errors already start with
  // the op's name. On the error path only: prefix the others.
  static XLA_FFI_Error* name_decoding_error(XLA_FFI_CallFrame* frame, XLA_FFI_Error* err) {
    if (err == nullptr) return nullptr;
    const std::string message = xffi::internal::GetErrorMessage(frame->api, err);
    if (message.rfind(Op::kName, 0) == 0) return err;
    xffi::internal::DestroyError(frame->api, err);
    const std::string named = StrCat(Op::kName, ": ", message);
    XLA_FFI_Error_Create_Args args;
    args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
    args.extension_start = nullptr;
    args.message = named.c_str();
    args.errc = XLA_FFI_Error_Code_INVALID_ARGUMENT;  // what XLA's decoder reports
    return frame->api->XLA_FFI_Error_Create(&args);
  }

  template <typename Binding, typename Fn>
  static auto* bind_with_traits(Binding&& binding, Fn fn) {
    if constexpr (Backend::kCommandBufferCompatible) {
      return std::move(binding).To(std::move(fn), {xffi::Traits::kCmdBufferCompatible}).release();
    } else {
      return std::move(binding).To(std::move(fn)).release();
    }
  }

  // Runs body, names the op in any error it returns, and turns exceptions into errors.
  template <typename Body>
  static xffi::Error guarded(Body&& body) noexcept {
    try {
      const Status st = body();
      if (st.ok() || st.message().rfind(Op::kName, 0) == 0) return to_error(st);
      return to_error(Status(st.code(), StrCat(Op::kName, ": ", st.message())));
    } catch (const std::exception& e) {
      return xffi::Error(xffi::ErrorCode::kInternal,
                         StrCat(Op::kName, ": internal error: ", e.what()));
    } catch (...) {
      return xffi::Error(xffi::ErrorCode::kInternal, StrCat(Op::kName, ": internal error"));
    }
  }
};

}  // namespace jax_aiter::ffi

// C entry points stay visible even when the consumer builds with -fvisibility=hidden.
#define JAX_AITER_EXPORT __attribute__((visibility("default")))

// Defines, in the consumer's translation unit, the C entry points of one handler:
//   XLA_FFI_Error* fn(XLA_FFI_CallFrame*)             execute stage
//   XLA_FFI_Error* fn_initialize(XLA_FFI_CallFrame*)  initialize stage (loads the module)
// and records it for jax_aiter::ffi::register_all(api, platform).
#define JAX_AITER_DEFINE_HANDLER(fn, Op, Backend)                                        \
  extern "C" JAX_AITER_EXPORT XLA_FFI_Error* fn(XLA_FFI_CallFrame* frame) {              \
    return ::jax_aiter::ffi::Handler<Op, Backend>::execute(frame);                       \
  }                                                                                      \
  extern "C" JAX_AITER_EXPORT XLA_FFI_Error* fn##_initialize(XLA_FFI_CallFrame* frame) { \
    return ::jax_aiter::ffi::Handler<Op, Backend>::initialize(frame);                    \
  }                                                                                      \
  static const ::jax_aiter::ffi::HandlerRegistrar fn##_jax_aiter_registrar {             \
    Op::kName, Backend::kKind,                                                           \
        XLA_FFI_Handler_Bundle{.instantiate = nullptr,                                   \
                               .prepare = nullptr,                                       \
                               .initialize = &fn##_initialize,                           \
                               .execute = &fn},                                          \
        ::jax_aiter::ffi::Handler<Op, Backend>::kTraits                                  \
  }
