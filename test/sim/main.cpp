#define BOOST_TEST_MODULE mongolock_sim
#include <boost/test/unit_test.hpp>
