#include "sim.h"
int philly_main(int argc, char **argv) { (void) argc; (void) argv; return 0; }
