// Closest-match suggestions for misspelt names ("did you mean 'model.heads'?").
#pragma once

#include <string>
#include <vector>

namespace attnlab::config {

// Levenshtein distance (insert, delete, substitute each cost 1).
int edit_distance(const std::string& a, const std::string& b);
// The candidate nearest to `word`, or "" when none is within a third of the word's length (at
// least 2 edits); ties go to the earlier candidate.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace attnlab::config
