#include "core/time.h"

namespace hcprp {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool ReadDigits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  return true;
}

}  // namespace

std::string FormatRfc3339(TimePoint t, bool with_fraction) {
  using namespace std::chrono;
  auto ns = duration_cast<nanoseconds>(t.time_since_epoch()).count();
  int64_t secs = ns / 1000000000;
  int64_t frac = ns % 1000000000;
  if (frac < 0) {
    frac += 1000000000;
    secs -= 1;
  }
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    days -= 1;
  }
  // Civil from days.
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
  // Written digit by digit: every request formats several timestamps, and snprintf made up most of
  // the cost.
  auto put = [](char* at, int64_t value, int width) {
    for (int i = width - 1; i >= 0; --i) {
      at[i] = static_cast<char>('0' + value % 10);
      value /= 10;
    }
  };
  // A TimePoint (nanoseconds in 64 bits) spans the years 1677 to 2262: always four digits.
  std::string out(with_fraction ? 27 : 20, '\0');  // YYYY-MM-DDTHH:MM:SS[.ffffff]Z
  put(out.data(), y, 4);
  char* p = out.data() + 4;
  p[0] = '-';
  put(p + 1, m, 2);
  p[3] = '-';
  put(p + 4, d, 2);
  p[6] = 'T';
  put(p + 7, rem / 3600, 2);
  p[9] = ':';
  put(p + 10, (rem % 3600) / 60, 2);
  p[12] = ':';
  put(p + 13, rem % 60, 2);
  if (with_fraction) {
    p[15] = '.';
    put(p + 16, frac / 1000, 6);
  }
  out.back() = 'Z';
  return out;
}

Result<TimePoint> ParseRfc3339(std::string_view s) {
  auto bad = [&] {
    return Error::InvalidArgument("not an RFC 3339 timestamp: '" + std::string(s.substr(0, 64)) + "'");
  };
  int y, mo, d, h, mi, se;
  if (!ReadDigits(s, 0, 4, y) || s.size() < 20 || s[4] != '-' || !ReadDigits(s, 5, 2, mo) || s[7] != '-' ||
      !ReadDigits(s, 8, 2, d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !ReadDigits(s, 11, 2, h) ||
      s[13] != ':' || !ReadDigits(s, 14, 2, mi) || s[16] != ':' || !ReadDigits(s, 17, 2, se)) {
    return bad();
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return bad();
  size_t pos = 19;
  int64_t frac_ns = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 9) frac_ns = frac_ns * 10 + (s[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return bad();
    for (size_t i = digits; i < 9; ++i) frac_ns *= 10;
  }
  int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!ReadDigits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !ReadDigits(s, pos + 4, 2, om) || oh > 23 || om > 59) {
      return bad();
    }
    offset_s = (oh * 3600 + om * 60) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return bad();
  }
  if (pos != s.size()) return bad();
  int64_t secs = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 +
                 mi * 60 + (se == 60 ? 59 : se) - offset_s;
  auto dur = std::chrono::seconds(secs) + std::chrono::nanoseconds(frac_ns);
  return TimePoint(std::chrono::duration_cast<Duration>(dur));
}

int64_t ToUnixMillis(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

TimePoint FromUnixMillis(int64_t ms) {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::milliseconds(ms)));
}

}  // namespace hcprp
