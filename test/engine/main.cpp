#define BOOST_TEST_MODULE mongolock_engine
#include <boost/test/unit_test.hpp>
