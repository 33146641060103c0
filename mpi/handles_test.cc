// mpi.h's constants are zcoll's: every predefined datatype handle names the DataType
// whose MPI name it has, every op handle its PredefinedOp, and the special values are
// the C++ API's.
#include <string>
#include <utility>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/intercommunicator.h"
#include "core/datatype.h"
#include "core/reduce_op.h"
#include "gtest/gtest.h"
#include "mpi/include/mpi.h"
#include "mpi/runtime.h"

namespace zcoll::mpi {
namespace {

#define NAMED(handle) std::pair<int, std::string>(handle, #handle)

TEST(MpiHandlesTest, EveryDatatypeHandleIsTheDataTypeOfItsName) {
  const std::vector<std::pair<int, std::string>> types = {
      NAMED(MPI_INT8_T),
      NAMED(MPI_INT16_T),
      NAMED(MPI_INT32_T),
      NAMED(MPI_INT64_T),
      NAMED(MPI_UINT8_T),
      NAMED(MPI_UINT16_T),
      NAMED(MPI_UINT32_T),
      NAMED(MPI_UINT64_T),
      NAMED(MPI_SIGNED_CHAR),
      NAMED(MPI_UNSIGNED_CHAR),
      NAMED(MPI_SHORT),
      NAMED(MPI_UNSIGNED_SHORT),
      NAMED(MPI_INT),
      NAMED(MPI_UNSIGNED),
      NAMED(MPI_LONG),
      NAMED(MPI_UNSIGNED_LONG),
      NAMED(MPI_LONG_LONG),
      NAMED(MPI_UNSIGNED_LONG_LONG),
      NAMED(MPI_AINT),
      NAMED(MPI_OFFSET),
      NAMED(MPI_COUNT),
      NAMED(MPI_FLOAT),
      NAMED(MPI_DOUBLE),
      NAMED(MPI_LONG_DOUBLE),
      NAMED(MPI_C_FLOAT_COMPLEX),
      NAMED(MPI_C_DOUBLE_COMPLEX),
      NAMED(MPI_C_LONG_DOUBLE_COMPLEX),
      NAMED(MPI_C_BOOL),
      NAMED(MPI_BYTE),
      NAMED(MPI_CHAR),
      NAMED(MPI_WCHAR),
      NAMED(MPI_FLOAT_INT),
      NAMED(MPI_DOUBLE_INT),
      NAMED(MPI_LONG_INT),
      NAMED(MPI_2INT),
      NAMED(MPI_SHORT_INT),
      NAMED(MPI_LONG_DOUBLE_INT),
  };
  // Every DataType but the two extensions has one.
  EXPECT_EQ(types.size() + 2, kNumDataTypes);
  for (const auto& [handle, name] : types) {
    const std::optional<DataType> type = PredefinedDataType(handle);
    ASSERT_TRUE(type.has_value()) << name;
    EXPECT_EQ(GetDataTypeInfo(*type).mpi_name, name);
    EXPECT_EQ(HandleOf(*type), handle) << name;
  }
  EXPECT_EQ(PredefinedDataType(MPIX_C_FLOAT16), DataType::kFloat16);
  EXPECT_EQ(PredefinedDataType(MPIX_BFLOAT16), DataType::kBfloat16);
  EXPECT_EQ(MPI_LONG_LONG_INT, MPI_LONG_LONG);
  EXPECT_EQ(MPI_C_COMPLEX, MPI_C_FLOAT_COMPLEX);
  for (int not_a_type :
       {MPI_DATATYPE_NULL, MPI_COMM_WORLD, MPI_SUM, 0, -1, MPI_LONG_DOUBLE_INT + 1}) {
    EXPECT_FALSE(PredefinedDataType(not_a_type).has_value()) << not_a_type;
  }
}

TEST(MpiHandlesTest, EveryOpHandleIsThePredefinedOpOfItsName) {
  const std::vector<std::pair<int, std::string>> ops = {
      NAMED(MPI_MAX),  NAMED(MPI_MIN),  NAMED(MPI_SUM),    NAMED(MPI_PROD),
      NAMED(MPI_LAND), NAMED(MPI_BAND), NAMED(MPI_LOR),    NAMED(MPI_BOR),
      NAMED(MPI_LXOR), NAMED(MPI_BXOR), NAMED(MPI_MINLOC), NAMED(MPI_MAXLOC),
  };
  for (const auto& [handle, name] : ops) {
    const ReduceOp* op = Runtime::Get().FindOp(handle);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(PredefinedOpMpiName(op->predefined()), name);
  }
  ASSERT_NE(Runtime::Get().FindOp(MPIX_AVG), nullptr);
  EXPECT_EQ(Runtime::Get().FindOp(MPIX_AVG)->predefined(), PredefinedOp::kAvg);
  EXPECT_EQ(Runtime::Get().FindOp(MPI_OP_NULL), nullptr);
  EXPECT_EQ(Runtime::Get().FindOp(MPIX_AVG + 1), nullptr);
}

TEST(MpiHandlesTest, SpecialValuesAreTheCppApis) {
  EXPECT_EQ(MPI_IN_PLACE, kInPlace);
  EXPECT_EQ(MPI_ROOT, kRoot);
  EXPECT_EQ(MPI_PROC_NULL, kProcNull);
  EXPECT_NE(MPI_UNDEFINED, kUndefinedColor);  // mapped by MPI_Comm_split
}

TEST(MpiHandlesTest, ErrorCodesKeepTheirClassAndMessage) {
  Runtime& runtime = Runtime::Get();
  const int code = runtime.CodeFor(Refusal(MPI_ERR_ROOT, "rank 3: root 9 is not a rank"));
  std::string text;
  int error_class = -1;
  ASSERT_TRUE(runtime.Describe(code, &text, &error_class));
  EXPECT_EQ(error_class, MPI_ERR_ROOT);
  EXPECT_EQ(text, "rank 3: root 9 is not a rank");
  ASSERT_TRUE(runtime.Describe(MPI_ERR_COUNT, &text, &error_class));
  EXPECT_EQ(error_class, MPI_ERR_COUNT);
  EXPECT_EQ(text, "invalid count argument");
  EXPECT_FALSE(runtime.Describe(-1, &text, &error_class));
  EXPECT_FALSE(runtime.Describe(63, &text, &error_class));
  EXPECT_EQ(ErrorClassOf(absl::DeadlineExceededError("late")), MPI_ERR_OTHER);
  EXPECT_EQ(ErrorClassOf(absl::ResourceExhaustedError("full")), MPI_ERR_NO_MEM);
}

}  // namespace
}  // namespace zcoll::mpi
