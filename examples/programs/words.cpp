#include <iostream>
#include <map>
#include <sstream>
#include <string>

int main()
{
	std::map<std::string, int> freq;
	std::string line, word;
	while (std::getline(std::cin, line)) {
		std::istringstream in(line);
		while (in >> word)
			freq[word]++;
	}
	for (const auto &kv : freq)
		std::cout << kv.first << " " << kv.second << "\n";
}
