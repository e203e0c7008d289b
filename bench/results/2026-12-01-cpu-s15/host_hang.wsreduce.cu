int main(int, char **) {
  while (1) {
  }
}
