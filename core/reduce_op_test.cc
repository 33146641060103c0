#include "core/reduce_op.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_assertions.h"

namespace zcoll {
namespace {

using ::testing::HasSubstr;
using Op = PredefinedOp;
using T = DataType;

// The standard's table transcribed per datatype, independently of the group
// bookkeeping in reduce_op.cc: MPI-4.1 section 6.9.2 (op table, MINLOC/MAXLOC types)
// and the MPI-2.2 change log items 3 and 11.
std::map<DataType, std::set<PredefinedOp>> ExpectedTable() {
  const std::set<Op> c_integer = {Op::kMax, Op::kMin,  Op::kSum,  Op::kProd, Op::kLand,
                                  Op::kLor, Op::kLxor, Op::kBand, Op::kBor,  Op::kBxor};
  // MPI_AINT, MPI_OFFSET, MPI_COUNT: "Fortran integer" rows, so no logical ops.
  const std::set<Op> multi_language = {Op::kMax,  Op::kMin, Op::kSum, Op::kProd,
                                       Op::kBand, Op::kBor, Op::kBxor};
  const std::set<Op> floating = {Op::kMax, Op::kMin, Op::kSum, Op::kProd, Op::kAvg};
  const std::set<Op> complex = {Op::kSum, Op::kProd};
  const std::set<Op> logical = {Op::kLand, Op::kLor, Op::kLxor};
  const std::set<Op> byte = {Op::kBand, Op::kBor, Op::kBxor};
  const std::set<Op> pair = {Op::kMinloc, Op::kMaxloc};
  std::map<DataType, std::set<PredefinedOp>> table;
  for (T type :
       {T::kInt8, T::kInt16, T::kInt32, T::kInt64, T::kUint8, T::kUint16, T::kUint32, T::kUint64,
        T::kSignedChar, T::kUnsignedChar, T::kShort, T::kUnsignedShort, T::kInt, T::kUnsigned,
        T::kLong, T::kUnsignedLong, T::kLongLong, T::kUnsignedLongLong}) {
    table[type] = c_integer;
  }
  for (T type : {T::kAint, T::kOffset, T::kCount}) table[type] = multi_language;
  for (T type : {T::kFloat, T::kDouble, T::kLongDouble, T::kFloat16, T::kBfloat16}) {
    table[type] = floating;
  }
  for (T type : {T::kCFloatComplex, T::kCDoubleComplex, T::kCLongDoubleComplex}) {
    table[type] = complex;
  }
  table[T::kCBool] = logical;
  table[T::kByte] = byte;
  table[T::kChar] = {};  // "MPI_CHAR is not allowed for predefined reduction operations"
  table[T::kWchar] = {};
  for (T type :
       {T::kFloatInt, T::kDoubleInt, T::kLongInt, T::k2Int, T::kShortInt, T::kLongDoubleInt}) {
    table[type] = pair;
  }
  return table;
}

TEST(ReduceOpTableTest, EveryOpTypePairMatchesTheStandard) {
  const auto expected = ExpectedTable();
  ASSERT_EQ(expected.size(), kNumDataTypes) << "the transcription misses a datatype";
  int allowed = 0, refused = 0;
  for (DataType type : AllDataTypes()) {
    for (PredefinedOp op : AllPredefinedOps()) {
      const bool should_allow = expected.at(type).count(op) > 0;
      const std::string pair = absl::StrCat(PredefinedOpName(op), " on ", DataTypeName(type));
      EXPECT_EQ(IsOpDefinedFor(op, type), should_allow) << pair;
      const absl::Status status = CheckOpForDataType(op, type);
      if (should_allow) {
        EXPECT_TRUE(status.ok()) << pair << ": " << status;
        ++allowed;
      } else {
        EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << pair;
        EXPECT_THAT(status.message(), HasSubstr(PredefinedOpMpiName(op))) << pair;
        EXPECT_THAT(status.message(), HasSubstr(DataTypeName(type))) << pair;
        ++refused;
      }
    }
  }
  EXPECT_EQ(allowed + refused, static_cast<int>(kNumDataTypes * kNumPredefinedOps));
  EXPECT_GT(refused, 0);
}

TEST(ReduceOpTableTest, MessagesNameOpTypeAndWhatIsAllowed) {
  const absl::Status max_complex = CheckOpForDataType(Op::kMax, T::kCFloatComplex);
  EXPECT_EQ(max_complex.message(),
            "reduction op MPI_MAX is not defined for datatype c_float_complex "
            "(MPI_C_FLOAT_COMPLEX), a complex type; MPI_MAX accepts only C integer, "
            "multi-language integer, floating point types");
  EXPECT_THAT(CheckOpForDataType(Op::kBand, T::kFloat).message(),
              HasSubstr("MPI_BAND is not defined for datatype float (MPI_FLOAT)"));
  EXPECT_THAT(CheckOpForDataType(Op::kSum, T::kChar).message(),
              HasSubstr("datatype char (MPI_CHAR), a character type"));
  EXPECT_THAT(CheckOpForDataType(Op::kMaxloc, T::kDouble).message(),
              HasSubstr("accepts only value-index pair types"));
  EXPECT_THAT(CheckOpForDataType(Op::kLand, T::kFloat16).message(),
              HasSubstr("datatype float16, a floating point type"));
}

TEST(ReduceOpTableTest, ValuesOutsideTheEnumsAreRefused) {
  EXPECT_THAT(CheckOpForDataType(Op::kSum, static_cast<DataType>(200)).message(),
              HasSubstr("datatype value 200 is not a zcoll::DataType"));
  EXPECT_THAT(CheckOpForDataType(static_cast<PredefinedOp>(99), T::kFloat).message(),
              HasSubstr("op value 99 is not a zcoll::PredefinedOp"));
  EXPECT_FALSE(IsValidDataType(static_cast<DataType>(kNumDataTypes)));
  EXPECT_TRUE(IsValidDataType(T::kLongDoubleInt));
}

TEST(ReduceOpTest, PredefinedOpsAreCommutativeAndNamed) {
  for (PredefinedOp op : AllPredefinedOps()) {
    ReduceOp reduce_op = op;
    EXPECT_TRUE(reduce_op.is_predefined());
    EXPECT_EQ(reduce_op.predefined(), op);
    EXPECT_TRUE(IsCommutative(reduce_op)) << PredefinedOpName(op);
    EXPECT_EQ(reduce_op.name(), PredefinedOpName(op));
    EXPECT_EQ(*ParsePredefinedOp(PredefinedOpName(op)), op);
  }
  EXPECT_EQ(*ParsePredefinedOp("MPI_MAXLOC"), Op::kMaxloc);
  EXPECT_EQ(*ParsePredefinedOp("Sum"), Op::kSum);
  absl::StatusOr<PredefinedOp> bad = ParsePredefinedOp("median");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("unknown reduction op 'median'"));
}

TEST(ReduceOpTest, UserOpKeepsItsFunctionFlagAndOperandOrder) {
  // Concatenation of digits is associative but not commutative: "in" is the left
  // operand, as MPI_User_function's invec.
  std::vector<std::string> calls;
  absl::StatusOr<ReduceOp> concat = ReduceOp::CreateUser(
      [&calls](const void* in, void* inout, size_t count, DataType type) {
        const int* left = static_cast<const int*>(in);
        int* right = static_cast<int*>(inout);
        for (size_t i = 0; i < count; ++i) right[i] = left[i] * 10 + right[i];
        calls.push_back(absl::StrCat(count, " ", DataTypeName(type)));
      },
      /*commutative=*/false, "concat");
  ASSERT_OK(concat);
  EXPECT_FALSE(concat->is_predefined());
  EXPECT_FALSE(IsCommutative(*concat));
  EXPECT_EQ(concat->name(), "concat");
  int in[2] = {1, 4};
  int inout[2] = {2, 5};
  concat->user_function()(in, inout, 2, T::kInt);
  EXPECT_EQ(inout[0], 12);
  EXPECT_EQ(inout[1], 45);
  EXPECT_THAT(calls, testing::ElementsAre("2 int"));

  // User ops apply to every datatype, MPI_CHAR included.
  for (DataType type : AllDataTypes()) EXPECT_OK(CheckOpForDataType(*concat, type));
}

TEST(ReduceOpTest, UserOpEquality) {
  auto noop = [](const void*, void*, size_t, DataType) {};
  ReduceOp a = *ReduceOp::CreateUser(noop, true, "a");
  ReduceOp a_copy = a;
  ReduceOp b = *ReduceOp::CreateUser(noop, true, "a");
  EXPECT_TRUE(IsCommutative(a));
  EXPECT_EQ(a, a_copy);
  EXPECT_NE(a, b);
  EXPECT_NE(a, ReduceOp(Op::kSum));
  EXPECT_EQ(ReduceOp(Op::kSum), ReduceOp(Op::kSum));
  EXPECT_NE(ReduceOp(Op::kSum), ReduceOp(Op::kProd));
}

TEST(ReduceOpTest, EmptyUserFunctionIsRefused) {
  absl::StatusOr<ReduceOp> op = ReduceOp::CreateUser(nullptr, true, "broken");
  ASSERT_FALSE(op.ok());
  EXPECT_EQ(op.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(op.status().message(), HasSubstr("user op 'broken' is empty"));
}

}  // namespace
}  // namespace zcoll
