#define BOOST_TEST_MODULE mongolock_integration
#include <boost/test/unit_test.hpp>
