<?php
/* php install.php HOST: WordPress's own installer (what install.php?step=2
 * calls), run from php-cli for the test's host, then one post with a fixed
 * date and one page, so their permalinks are known. */
$host = $argv[1];
$_SERVER['HTTP_HOST'] = $host;
$_SERVER['SERVER_NAME'] = preg_replace('/:.*/', '', $host);
$_SERVER['REQUEST_URI'] = '/wp-admin/install.php';
$_SERVER['REQUEST_METHOD'] = 'GET';
$_SERVER['SERVER_PROTOCOL'] = 'HTTP/1.1';
define('WP_INSTALLING', true);
function wp_mail() { return true; } /* pluggable: no mail here */
require '/usr/share/wordpress/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/upgrade.php';
wp_install('Warren Test Blog', 'admin', 'admin@example.invalid', true, '', 'warren-test-admin');
wp_insert_post(['post_title' => 'Burrows and Warrens', 'post_name' => 'burrows-and-warrens', 'post_content' => 'A post about rabbits.', 'post_status' => 'publish', 'post_date' => '2024-03-15 10:00:00']);
wp_insert_post(['post_title' => 'About the Warren', 'post_name' => 'about-the-warren', 'post_type' => 'page', 'post_content' => 'A page.', 'post_status' => 'publish']);
echo "installed\n";
