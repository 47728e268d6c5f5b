/* Layering probe, compiled with the cli layer's include directories and
 * links (tests/layering/CMakeLists.txt): "install.h" belongs to the setup
 * tools (bridge/setup), a floor above the command line's library, so this
 * must fail to compile. */
#include "install.h"
