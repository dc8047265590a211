// Unit tests of the model's read(2) internals: the size lookup of Read()'s hot
// path. (Member times, the 16 KiB group limit and PERF_FORMAT_LOST are cases of
// the read_format suite, run on every mock profile.)
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>

#include "harness/read_format.h"
#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

class ReadModel : public MockTest {};

// core.c perf_read() -> __perf_read(): read(2) of a non-group event returns
// perf_event_read_size() bytes (value, then each read_format field asked for)
// and fails with ENOSPC for a shorter buffer — for every read_format.
// MockBackend::Read() answers this with a lookup table (its hot path).
TEST_F(ReadModel, ReadSizeOfEveryNonGroupReadFormat) {
  for (uint64_t rf = 0; rf < PERF_FORMAT_MAX; ++rf) {
    if (rf & PERF_FORMAT_GROUP) continue;
    SCOPED_TRACE(rf);
    perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_DUMMY);
    a.read_format = rf;
    const int fd = MustOpen(a);
    const size_t size = ReadFormatSize(rf);
    uint64_t buf[8] = {};
    Result<size_t> n = b().Read(fd, buf, size);
    ASSERT_TRUE(n.ok()) << n.ToString();
    EXPECT_EQ(*n, size);
    EXPECT_EQ(n.call(), fmt::format("read(fd={}, len={})", fd, size));
    Result<size_t> short_read = b().Read(fd, buf, size - 1);
    EXPECT_EQ(short_read.error(), ENOSPC) << short_read.ToString();
    EXPECT_OK(b().Close(fd));
  }
}

}  // namespace
}  // namespace perftest
