#define BOOST_TEST_MODULE mongolock_unit
#include <boost/test/unit_test.hpp>
