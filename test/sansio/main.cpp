#define BOOST_TEST_MODULE mongolock_sansio
#include <boost/test/unit_test.hpp>
