// Where `make install` puts the files the program reads at run time besides itself (the Python
// analysis, the corpus scripts, cluster/env.sh): <prefix>/share/attnlab, found from the
// executable's own location (<prefix>/bin/attnlab), so an installed tree works under any prefix.
#pragma once

#include <string>

namespace attnlab {

// The installed data directory of the running executable when it holds `relative` (a file such
// as "analysis/report.py"), else "" (the program runs from a build tree, or the file is not
// installed).
std::string installed_data_dir(const std::string& relative);

}  // namespace attnlab
