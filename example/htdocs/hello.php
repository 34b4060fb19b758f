<?php
// Run by a php-cgi process of the pool that example/warren.conf declares.
$name = isset($_GET['name']) && $_GET['name'] !== '' ? $_GET['name'] : 'world';
header('Content-Type: text/html; charset=utf-8');
?>
<!DOCTYPE html>
<html><body>
<h1>Hello, <?= htmlspecialchars($name) ?>!</h1>
<p>PHP <?= PHP_VERSION ?> via <?= htmlspecialchars($_SERVER['SERVER_SOFTWARE']) ?>, script <?= htmlspecialchars($_SERVER['SCRIPT_NAME']) ?>.</p>
<form method="get"><input name="name" placeholder="your name"> <button>Greet</button></form>
</body></html>
