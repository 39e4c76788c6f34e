// expect: pass
#include <iostream>
#include <vector>
#include <algorithm>
int main()
{
	std::vector<int> v{5, 3, 9, 1};
	std::sort(v.begin(), v.end());
	for (int x : v)
		std::cout << x << " ";
	std::cout << "\n";
}
