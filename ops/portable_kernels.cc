// Scalar kernels for the datatypes SIMD does not help: long double (x87, no vector
// form), complex products, complex long double sums and the MINLOC/MAXLOC pairs.
// Same two shapes and the same semantics as the SIMD kernels (ops/reduce_kernels.h);
// elements are moved with memcpy so callers may pass unaligned buffers.

#include <cmath>
#include <complex>
#include <cstddef>
#include <cstring>
#include <tuple>

#include "core/datatype.h"
#include "core/reduce_op.h"
#include "ops/reduce_kernels.h"

namespace zcoll::ops_internal {
namespace {

template <typename T>
T LoadElement(const void* base, size_t index) {
  T value;
  std::memcpy(&value, static_cast<const char*>(base) + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void StoreElement(void* base, size_t index, const T& value) {
  std::memcpy(static_cast<char*>(base) + index * sizeof(T), &value, sizeof(T));
}

template <typename T>
bool IsNan(const T& value) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(value);
  } else {
    return false;
  }
}

// Op functors; `a` is the left operand. Floating MAX/MIN propagate NaN exactly as
// the SIMD kernels do (ops/reduce_kernels.cc).
struct MaxScalar {
  static constexpr PredefinedOp kOp = PredefinedOp::kMax;
  template <typename T>
  T operator()(T a, T b) const {
    return IsNan(a) ? a : (a > b ? a : b);
  }
};

struct MinScalar {
  static constexpr PredefinedOp kOp = PredefinedOp::kMin;
  template <typename T>
  T operator()(T a, T b) const {
    return IsNan(a) ? a : (a < b ? a : b);
  }
};

struct SumScalar {
  static constexpr PredefinedOp kOp = PredefinedOp::kSum;
  template <typename T>
  T operator()(T a, T b) const {
    return a + b;
  }
};

struct AvgScalar : SumScalar {
  static constexpr PredefinedOp kOp = PredefinedOp::kAvg;
};

// Complex products use the textbook formula, as MPICH and Open MPI do, not C's
// Annex G rules for infinities (which std::complex's operator* may follow).
struct ProdScalar {
  static constexpr PredefinedOp kOp = PredefinedOp::kProd;
  template <typename T>
  T operator()(T a, T b) const {
    return a * b;
  }
  template <typename R>
  std::complex<R> operator()(std::complex<R> a, std::complex<R> b) const {
    return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
  }
};

// MINLOC and MAXLOC (the MPI standard's MPI_MINLOC and MPI_MAXLOC): the better value wins; equal
// values keep the lower index. A NaN value wins over a number (NaN propagates, as for MAX/MIN);
// between two NaNs the lower index wins. Both rules are symmetric, so the ops stay
// commutative.
template <bool kMax>
struct LocScalar {
  static constexpr PredefinedOp kOp = kMax ? PredefinedOp::kMaxloc : PredefinedOp::kMinloc;
  template <typename V>
  ValueIndex<V> operator()(const ValueIndex<V>& a, const ValueIndex<V>& b) const {
    const bool a_nan = IsNan(a.value), b_nan = IsNan(b.value);
    if (a_nan != b_nan) return a_nan ? a : b;
    if (!a_nan) {
      if (kMax ? a.value > b.value : a.value < b.value) return a;
      if (kMax ? b.value > a.value : b.value < a.value) return b;
    }
    return a.index <= b.index ? a : b;
  }
};

template <class Op>
inline constexpr bool kAverages = Op::kOp == PredefinedOp::kAvg;

template <class Op, typename T>
void PortableBinary(const void* a, const void* b, void* out, size_t count) {
  const Op op;
  for (size_t i = 0; i < count; ++i) {
    T result = op(LoadElement<T>(a, i), LoadElement<T>(b, i));
    if constexpr (kAverages<Op>) result /= T(2);
    StoreElement(out, i, result);
  }
}

template <class Op, typename T>
void PortableMany(const void* const* inputs, size_t num_inputs, void* out, size_t count) {
  const Op op;
  for (size_t i = 0; i < count; ++i) {
    T accumulator = LoadElement<T>(inputs[0], i);
    for (size_t j = 1; j < num_inputs; ++j)
      accumulator = op(accumulator, LoadElement<T>(inputs[j], i));
    if constexpr (kAverages<Op>) accumulator /= static_cast<T>(num_inputs);
    StoreElement(out, i, accumulator);
  }
}

template <typename T>
void PortableDivide(void* data, size_t count, size_t divisor) {
  for (size_t i = 0; i < count; ++i) {
    StoreElement(data, i, LoadElement<T>(data, i) / static_cast<T>(divisor));
  }
}

template <typename T, class... Ops>
void Register(KernelTable& table, std::tuple<Ops...>) {
  ((table.entries[static_cast<size_t>(Ops::kOp)][static_cast<size_t>(kDataTypeOf<T>)] =
        Kernels{&PortableBinary<Ops, T>, &PortableMany<Ops, T>}),
   ...);
}

template <class... Pairs>
void RegisterPairs(KernelTable& table, std::tuple<Pairs...>) {
  (Register<Pairs>(table, std::tuple<LocScalar<false>, LocScalar<true>>{}), ...);
}

KernelTable BuildPortableTable() {
  KernelTable table;
  Register<long double>(table,
                        std::tuple<MaxScalar, MinScalar, SumScalar, ProdScalar, AvgScalar>{});
  table.divide[static_cast<size_t>(DataType::kLongDouble)] = &PortableDivide<long double>;
  // Complex float and double sums run on the SIMD float/double kernels.
  Register<std::complex<float>>(table, std::tuple<ProdScalar>{});
  Register<std::complex<double>>(table, std::tuple<ProdScalar>{});
  Register<std::complex<long double>>(table, std::tuple<SumScalar, ProdScalar>{});
  RegisterPairs(table, std::tuple<FloatInt, DoubleInt, LongInt, TwoInt, ShortInt, LongDoubleInt>{});
  table.target_name = "portable";
  return table;
}

}  // namespace

const KernelTable& PortableKernels() {
  static const KernelTable* const table = new KernelTable(BuildPortableTable());
  return *table;
}

}  // namespace zcoll::ops_internal
