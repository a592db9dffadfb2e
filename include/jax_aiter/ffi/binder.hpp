// One template turns (op, backend) into an XLA FFI handler. Both stages decode the call by the op's
// spec (ffi/spec.hpp), validate it, and walk the op's tiers in order (ops/dispatch.hpp): the first
// tier that supports the call plans it, and every kernel of that plan is resolved on the device
// (runtime/backend.hpp). A kernel whose code object is nowhere to be found (NotFound: AITER's code
// object neither embedded nor in the AITER root), or whose AITER code object declares no argument
// layout we know (FailedPrecondition: an AITER version older or newer than our tables), passes the
// call to the next tier, unless the call forced this tier; any other failure is the call's error.
//   initialize stage: resolves (loads, checks) the kernels the plan for these static shapes picks,
//                     before execution and before any command-buffer capture;
//   execute stage:    plans again (pure arithmetic), finds the resolved kernels, and issues the
//                     plan's launches and memsets on XLA's stream, nothing else.
// Every failure is an ffi::Error naming the op, never an exception or an abort.
#pragma once

#include <array>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include "jax_aiter/core/status.hpp"
#include "jax_aiter/core/verdict.hpp"
#include "jax_aiter/ffi/context.hpp"
#include "jax_aiter/ffi/describe.hpp"
#include "jax_aiter/ffi/error.hpp"
#include "jax_aiter/ffi/registry.hpp"
#include "jax_aiter/ffi/spec.hpp"
#include "jax_aiter/ffi/tensor.hpp"
#include "jax_aiter/kernels/plan.hpp"
#include "jax_aiter/ops/dispatch.hpp"
#include "jax_aiter/runtime/backend.hpp"
#include "jax_aiter/runtime/peer_groups.hpp"
#include "xla/ffi/api/ffi.h"

namespace jax_aiter::ffi {

enum class Stage : uint8_t { kInitialize, kExecute };

template <typename Op, typename Backend>
struct Handler {
  using P = typename Op::Params;
  using S = Spec<Op>;

  static constexpr XLA_FFI_Handler_Traits kTraits =
      Backend::kCommandBufferCompatible ? XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE : 0;

  // validate -> tiers -> resolve (-> launch); the part of a stage that knows nothing of XLA.
  static Status run(const Where<Backend>& where, const P& p, Stage stage = Stage::kExecute) {
    JAX_AITER_RETURN_IF_ERROR(Op::validate(p));
    if constexpr (requires { Op::kUsesPeerGroup; }) {
      // An op whose kernels reach the other devices of its mesh (ops/peer_all_to_all.hpp): the
      // runtime's peer group of the call's devices, made in the initialize stage.
      auto table = runtime::peer_table<typename Backend::PeerMemory>(Op::kName, where.device,
                                                                     p.devices, p.staging_bytes);
      if (!table) return table.status();
      P with_table = p;
      with_table.table = *table;
      return run_validated(where, with_table, stage);
    } else {
      return run_validated(where, p, stage);
    }
  }

  // run() after Op::validate.
  static Status run_validated(const Where<Backend>& where, const P& p, Stage stage) {
    JAX_AITER_RETURN_IF_ERROR(ops::validate_dispatch<Op>(p.dispatch));
    void* workspace = nullptr;
    int64_t workspace_bytes = 0;
    if constexpr (S::kHasWorkspace) {
      JAX_AITER_RETURN_IF_ERROR(check_workspace(p));
      workspace = p.workspace.data;
      workspace_bytes = p.workspace.bytes();
    }
    auto device = Backend::target(where.device);
    if (!device) return device.status();
    const bool forced = p.dispatch.tier != "auto";

    // Why each tier did not run the call, kept allocation-free until an error needs the text.
    std::array<Verdict, ops::kTierCount<Op>> verdicts{};
    std::array<const Status*, ops::kTierCount<Op>> missing{};
    Status result;
    bool done = false;
    ops::for_each_tier<Op>([&](auto i) {
      using T = ops::TierAt<Op, i>;
      if (forced && p.dispatch.tier != T::kName) {
        verdicts[i] = ops::not_forced(T::kName);
        return false;
      }
      auto target = ops::tier_target<T>(Op::kName, *device, p.dispatch);
      if (!target) {
        result = target.status();
        return done = true;
      }
      const auto decision = ops::decide<T>(p, *target);
      verdicts[i] = decision.verdict();
      if (!decision.ok()) return false;
      kernels::Plan plan;
      plan.workspace_base = workspace;
      ops::plan_with<T>(p, *target, *decision, plan);
      if (plan.workspace.total > workspace_bytes) {
        result = Internal(StrCat(Op::kName, ": tier ", T::kName, " needs ", plan.workspace.total,
                                 " workspace bytes, more than the ", workspace_bytes,
                                 " workspace_bytes gave"));
        return done = true;
      }
      std::array<const typename Backend::Kernel*, kernels::kMaxPlanSteps> resolved{};
      for (size_t s = 0; s < plan.count; ++s) {
        if (plan.steps[s].kind != kernels::Step::Kind::kLaunch) continue;
        const auto& kernel = Backend::resolve(where.device, *plan.steps[s].launch.kernel);
        if (!kernel.status.ok()) {
          const ErrorCode code = kernel.status.code();
          const bool absent = code == ErrorCode::kNotFound ||
                              (ops::runs_aiter_code<T>() && code == ErrorCode::kFailedPrecondition);
          if (absent && !forced) {
            missing[i] = &kernel.status;
            return false;
          }
          result = kernel.status;
          return done = true;
        }
        resolved[s] = &kernel;
      }
      done = true;
      if (stage == Stage::kExecute) result = issue(where, plan, resolved);
      return true;
    });
    if (done) return result;
    return no_tier(verdicts, missing);
  }

  static XLA_FFI_Error* execute(XLA_FFI_CallFrame* frame) {
    return stage_handler<Stage::kExecute>(frame);
  }
  static XLA_FFI_Error* initialize(XLA_FFI_CallFrame* frame) {
    return stage_handler<Stage::kInitialize>(frame);
  }

  static constexpr XLA_FFI_Handler_Bundle bundle() {
    // Designated: FFI 0.4 appends members to the bundle.
    return XLA_FFI_Handler_Bundle{
        .instantiate = nullptr, .prepare = nullptr, .initialize = &initialize, .execute = &execute};
  }

  // The registry entry: the handler plus what the tools ask of the op.
  static HandlerEntry entry() {
    if constexpr (requires { Op::kUsesPeerGroup; }) {
      runtime::PeerGroups<typename Backend::PeerMemory>::enroll();  // its setup entry points
    }
    return {Op::kName,      Backend::kKind,          bundle(),       kTraits,
            &spec_json<Op>, &workspace_bytes_of<Op>, &plan_json<Op>, &validate_call<Op>};
  }

 private:
  static Status check_workspace(const P& p) {
    const int64_t need = Op::workspace_bytes(p);
    if (p.workspace.dtype != DType::kU8 || p.workspace.rank != 1 || p.workspace.dims[0] < need) {
      return ops::operand_error(
          Op::kName, "workspace",
          StrCat("expected u8[>= ", need, "] (workspace_bytes), got ", ops::describe(p.workspace)));
    }
    if (need > 0 &&
        (p.workspace.data == nullptr || reinterpret_cast<uintptr_t>(p.workspace.data) % 16 != 0)) {
      return ops::operand_error(Op::kName, "workspace",
                                StrCat("expected a 16-byte aligned buffer, got address ",
                                       reinterpret_cast<uintptr_t>(p.workspace.data)));
    }
    return {};
  }

  template <size_t N>
  static Status issue(const Where<Backend>& where, const kernels::Plan& plan,
                      const std::array<const typename Backend::Kernel*, N>& resolved) {
    for (size_t s = 0; s < plan.count; ++s) {
      const kernels::Step& step = plan.steps[s];
      if (step.kind == kernels::Step::Kind::kMemset) {
        JAX_AITER_RETURN_IF_ERROR(Backend::memset(where.device, where.stream, step.memset));
      } else {
        JAX_AITER_RETURN_IF_ERROR(
            Backend::launch(where.device, where.stream, *resolved[s], step.launch));
      }
    }
    return {};
  }

  // On the error path only: every tier (with its AITER family, if any) and why it did not run the
  // call.
  static Status no_tier(const std::array<Verdict, ops::kTierCount<Op>>& verdicts,
                        const std::array<const Status*, ops::kTierCount<Op>>& missing) {
    const auto names = ops::tier_names<Op>();
    const auto families = ops::tier_families<Op>();
    std::string why;
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string reason = missing[i] ? missing[i]->message() : verdicts[i].text();
      const std::string family = families[i].empty() ? "" : StrCat(" (", families[i], ")");
      why = StrCat(why, i ? "; " : "", names[i], family, ": ", reason);
    }
    return Unimplemented(StrCat(Op::kName, ": no tier runs this call (", why, ")"));
  }

  template <Stage kStage>
  static XLA_FFI_Error* stage_handler(XLA_FFI_CallFrame* frame) {
    static constexpr auto kXlaStage = kStage == Stage::kExecute ? xffi::ExecutionStage::kExecute
                                                                : xffi::ExecutionStage::kInitialize;
    static auto* handler =
        bind_with_traits(xffi::Ffi::Bind<kXlaStage>()
                             .template Ctx<Where<Backend>>()
                             .RemainingArgs()
                             .RemainingRets()
                             .Attrs(),
                         [](Where<Backend> where, xffi::RemainingArgs args,
                            xffi::RemainingRets rets, xffi::Dictionary attrs) -> xffi::Error {
                           return guarded([&]() -> Status {
                             auto p = S::decode(XlaCall(Op::kName, args, rets, attrs));
                             if (!p) return p.status();
                             return run(where, *p, kStage);
                           });
                         });
    return name_decoding_error(frame, handler->Call(frame));
  }

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

// The targets of one op of the manifest (ops.cmake): ffi/<op>.hpp specialises OpHandlers<"<op>">
// as a HandlerList of the ops it binds, and JAX_AITER_DEFINE_OP_HANDLERS("<op>", Backend) defines
// a handler for each (the Python package's handler libraries do so in one translation unit per op
// and backend).
template <typename... Ops>
struct HandlerList {};

template <size_t N>
struct OpName {
  char text[N];
  constexpr OpName(const char (&s)[N]) {  // NOLINT: implicit, so that OpHandlers<"gemm"> reads
    for (size_t i = 0; i < N; ++i) text[i] = s[i];
  }
};

template <OpName kOp>
struct OpHandlers;  // ffi/<op>.hpp: template <> struct OpHandlers<"<op>"> : HandlerList<...> {};

template <typename Backend, typename... Ops>
void register_handlers(HandlerList<Ops...>) {
  (HandlerRegistry::add(Handler<Ops, Backend>::entry()), ...);
}

}  // namespace jax_aiter::ffi

// Defines, in the consumer's translation unit, the C entry points of one handler:
//   XLA_FFI_Error* fn(XLA_FFI_CallFrame*)             execute stage
//   XLA_FFI_Error* fn_initialize(XLA_FFI_CallFrame*)  initialize stage (resolves the kernels)
// and records it for jax_aiter::ffi::register_all(api, platform) and the tools.
#define JAX_AITER_DEFINE_HANDLER(fn, Op, Backend)                                        \
  extern "C" JAX_AITER_EXPORT XLA_FFI_Error* fn(XLA_FFI_CallFrame* frame) {              \
    return ::jax_aiter::ffi::Handler<Op, Backend>::execute(frame);                       \
  }                                                                                      \
  extern "C" JAX_AITER_EXPORT XLA_FFI_Error* fn##_initialize(XLA_FFI_CallFrame* frame) { \
    return ::jax_aiter::ffi::Handler<Op, Backend>::initialize(frame);                    \
  }                                                                                      \
  static const ::jax_aiter::ffi::HandlerRegistrar fn##_jax_aiter_registrar {             \
    [] {                                                                                 \
      auto e = ::jax_aiter::ffi::Handler<Op, Backend>::entry();                          \
      e.bundle.initialize = &fn##_initialize;                                            \
      e.bundle.execute = &fn;                                                            \
      return e;                                                                          \
    }()                                                                                  \
  }

// Defines, in the consumer's translation unit, the handlers of every target of one op of the
// manifest (OpHandlers<op>, from ffi/<op>.hpp) for one backend, and records them for
// register_all(api, platform) and the tools, as JAX_AITER_DEFINE_HANDLER does for one (with no C
// entry point of its own: XLA and Python reach them through the registry).
#define JAX_AITER_DEFINE_OP_HANDLERS(op, Backend) \
  JAX_AITER_DEFINE_OP_HANDLERS_AT(op, Backend, __LINE__)
#define JAX_AITER_DEFINE_OP_HANDLERS_AT(op, Backend, line) \
  JAX_AITER_DEFINE_OP_HANDLERS_NAMED(op, Backend, jax_aiter_op_handlers_##line)
#define JAX_AITER_DEFINE_OP_HANDLERS_NAMED(op, Backend, name) \
  static const bool name =                                    \
      (::jax_aiter::ffi::register_handlers<Backend>(::jax_aiter::ffi::OpHandlers<op>{}), true)
